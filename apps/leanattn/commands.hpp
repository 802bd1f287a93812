// Registration of the subcommands; main.cpp calls each once.
#pragma once

#include <CLI/CLI.hpp>

namespace leanattn::cli {

void add_plan_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_check_command(CLI::App& app);

}  // namespace leanattn::cli
