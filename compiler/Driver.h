//===- Driver.h - the `tfc` command -----------------------------*- C++ -*-===//
#ifndef TFC_COMPILER_DRIVER_H
#define TFC_COMPILER_DRIVER_H

namespace tfc {

/// The whole `tfc` command line tool; tools/tfc is a thin main over it.
int compilerMain(int argc, char **argv);

} // namespace tfc

#endif // TFC_COMPILER_DRIVER_H
