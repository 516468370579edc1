// Exercise 10.4 — dynamic loss scaling (PyTorch's torch.amp.GradScaler, on the CPU).
//
// Why: fp16's smallest subnormal is 2^-24; gradients below it become 0 in the backward pass, with
// no error and no NaN: the weights they belong to stop learning. Multiplying the loss by S
// multiplies every gradient by S (the chain rule is linear), lifting them above the floor; the
// optimizer then needs the true gradients, so they are divided by S in fp32 before the step. Too
// large an S overflows some gradient to inf: that step is skipped and S halved; after
// growth_interval clean steps S doubles again, so S tracks the largest safe value.
#include <cmath>
#include <stdexcept>

#include "ch10/mixed_precision.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch10 {

LossScaler::LossScaler(LossScalerOptions options) : options_(options), scale_(options.init_scale) {
  require(std::isfinite(options.init_scale) && options.init_scale > 0.0f, "init_scale",
          "must be finite and > 0");
  require(options.growth_factor > 1.0f, "growth_factor", "must be > 1");
  require(options.backoff_factor > 0.0f && options.backoff_factor < 1.0f, "backoff_factor",
          "must be in (0, 1)");
  require(options.growth_interval >= 1, "growth_interval", "must be >= 1");
}

bool LossScaler::unscale_and_check(std::span<float> grads) const {
  // fp32 arithmetic: the unscaled gradient keeps the bits the scale saved.
  const float inv = 1.0f / scale_;
  bool finite = true;
  for (float& g : grads) {
    if (!std::isfinite(g)) finite = false;
    g *= inv;
  }
  return finite;
}

void LossScaler::update(bool found_inf) {
  // BEGIN EXERCISE 10.4
  // TODO(10.4): the scale's update after a step, GradScaler's rule.
  //   Contract: found_inf: scale *= backoff_factor and the growth tracker restarts at 0 (the
  //     caller skipped the step). Otherwise the tracker counts one more clean step; when it
  //     reaches growth_interval, scale *= growth_factor and the tracker restarts at 0. The scale
  //     never becomes inf (a growth that would overflow fp32 keeps the old scale) nor 0.
  //   Goal: the LossScaler tests (`scripts/lab check 10.4`, CPU).
  // STARTER: (void)found_inf;
  // STARTER: throw NotImplemented("LossScaler::update (exercise 10.4)");
  if (found_inf) {
    // BEGIN PITFALL scaler_grows_on_inf EXERCISES 10.4
    // Growing (or keeping) the scale after an overflow: every later step overflows again and is
    // skipped, and training silently stops (the loss is flat, no error). The test that feeds an
    // inf and expects the scale halved catches it; the fix is the backoff.
    const float next = scale_ * options_.backoff_factor;
    // BUG: const float next = scale_;
    // END PITFALL
    if (next > 0.0f) scale_ = next;
    tracker_ = 0;
    return;
  }
  if (++tracker_ >= options_.growth_interval) {
    const float next = scale_ * options_.growth_factor;
    if (std::isfinite(next)) scale_ = next;
    tracker_ = 0;
  }
  // END EXERCISE
}

}  // namespace cudalab::ch10
