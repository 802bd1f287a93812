// Grid (see grid.hpp) and launch().
#include "emulator/grid.hpp"

#include <algorithm>
#include <numeric>

#include "emulator/cta.hpp"

namespace leanattn::emulator {

Grid::Grid(const Launch& launch) : launch_(launch), rng_(launch.seed * 0x9e3779b97f4a7c15ull + 1) {
  order_.resize(static_cast<std::size_t>(launch.blocks));
  std::iota(order_.begin(), order_.end(), 0);
  std::shuffle(order_.begin(), order_.end(), rng_);
  for (int i = 0; i < launch.blocks; ++i) go_.push_back(std::make_unique<std::binary_semaphore>(0));
}

void Grid::run() {
  if (launch_.blocks == 0) return;
  while (resident_.size() < static_cast<std::size_t>(std::max(1, launch_.resident)) &&
         next_ < order_.size()) {
    start(order_[next_++]);
  }
  hand_to_random();
  done_.acquire();
  for (std::thread& t : threads_) t.join();
}

void Grid::start(int cta) {
  resident_.push_back(cta);
  threads_.emplace_back([this, cta] { cta_main(cta); });
}

void Grid::hand_to_random() {
  const int next = resident_[rng_() % resident_.size()];
  go_[static_cast<std::size_t>(next)]->release();
}

void Grid::maybe_switch(int me, double p) {
  if (resident_.size() < 2) return;
  if (std::uniform_real_distribution<double>(0.0, 1.0)(rng_) >= p) return;
  const int next = resident_[rng_() % resident_.size()];
  if (next == me) return;
  go_[static_cast<std::size_t>(next)]->release();
  go_[static_cast<std::size_t>(me)]->acquire();
}

void Grid::cta_main(int cta) {
  go_[static_cast<std::size_t>(cta)]->acquire();
  {
    Cta block(*this, cta, launch_);
    block.run();
  }
  finish(cta);
}

void Grid::finish(int me) {
  resident_.erase(std::find(resident_.begin(), resident_.end(), me));
  if (next_ < order_.size()) start(order_[next_++]);
  if (resident_.empty()) {
    done_.release();
  } else {
    hand_to_random();
  }
}

void Grid::report(const std::string& error) {
  if (error_.empty()) error_ = error;
}

std::string launch(const Launch& launch) {
  Grid grid(launch);
  grid.run();
  return grid.error();
}

}  // namespace leanattn::emulator
