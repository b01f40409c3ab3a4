// The seed experiment as a command (seed_experiment.cpp), run by main.cpp.
#ifndef TFC_EXAMPLES_SEED_EXPERIMENT_SEED_EXPERIMENT_HPP_
#define TFC_EXAMPLES_SEED_EXPERIMENT_SEED_EXPERIMENT_HPP_

#include "cli.hpp"

namespace tfc::run {

extern const Command kSeedExperimentCommand;

}  // namespace tfc::run

#endif  // TFC_EXAMPLES_SEED_EXPERIMENT_SEED_EXPERIMENT_HPP_
