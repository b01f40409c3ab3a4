//===- CpuTarget.h - the CPU target -----------------------------*- C++ -*-===//
#ifndef TFC_CODEGEN_CPU_CPUTARGET_H
#define TFC_CODEGEN_CPU_CPUTARGET_H

namespace tfc::cpu {

/// Registers the CPU target ("cpu") with codegen/target's registry.
void registerCpuTarget();

} // namespace tfc::cpu

#endif // TFC_CODEGEN_CPU_CPUTARGET_H
