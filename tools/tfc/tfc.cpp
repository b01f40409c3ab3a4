//===- tfc.cpp - the tfc compiler -----------------------------------------===//
#include "compiler/Driver.h"

int main(int argc, char **argv) { return tfc::compilerMain(argc, argv); }
