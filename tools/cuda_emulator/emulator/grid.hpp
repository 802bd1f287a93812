// Grid: the CTAs of one launch and the baton they pass (see launch.hpp). Only the CTA holding
// the baton runs; every piece of state here is touched by the holder only, and the semaphores
// order the hand-overs.
#pragma once

#include <memory>
#include <random>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "emulator/launch.hpp"

namespace leanattn::emulator {

class Grid {
 public:
  explicit Grid(const Launch& launch);
  // On the launching thread: runs every CTA, returns when all have finished.
  void run();
  // From the running CTA `me`: with probability p, hands the baton to a random resident CTA.
  void maybe_switch(int me, double p);
  // From the running CTA: the launch failed (the first report is kept).
  void report(const std::string& error);
  const std::string& error() const { return error_; }

 private:
  void start(int cta);
  void cta_main(int cta);
  void finish(int me);
  void hand_to_random();

  const Launch& launch_;
  std::mt19937_64 rng_;
  std::vector<int> order_;  // start order
  std::size_t next_ = 0;    // order_[next_..] not started
  std::vector<int> resident_;
  std::vector<std::unique_ptr<std::binary_semaphore>> go_;
  std::binary_semaphore done_{0};
  std::vector<std::thread> threads_;
  std::string error_;
};

}  // namespace leanattn::emulator
