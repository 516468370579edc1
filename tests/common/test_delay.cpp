// cudalab/delay.hpp: delay_stream() holds back what follows it on its stream (so a consumer on
// another stream that does not wait reads stale data, every time), and Contention runs beside a
// kernel without changing its result.
#include <gtest/gtest.h>

#include <vector>

#include "cudalab/delay.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

TEST(DelayArgs, RejectsBadDurationsAndBlocks) {
  cudalab::testing::expect_throws_naming([] { delay_stream(nullptr, -1.0); }, "microseconds");
  cudalab::testing::expect_throws_naming([] { delay_stream(nullptr, 2e7); }, "microseconds");
  EXPECT_NO_THROW(delay_stream(nullptr, 0.0));  // nothing enqueued: no device needed
}

TEST(DelayGpu, AConsumerThatDoesNotWaitReadsStaleData) {
  CUDALAB_REQUIRE_GPU();
  Stream producer, consumer;
  const std::size_t n = 1024;
  DeviceBuffer<float> data(n), copy_waited(n), copy_not_waited(n);
  // A warm-up of every kernel and copy of the race, with nothing in flight: with lazy module
  // loading (CUDA's default) the first launch of a kernel loads its module and may wait for the
  // whole device, so a first fill enqueued behind the delay would block the host for the 20 ms
  // and the consumer's copy would be enqueued only after the producer was done (the copy that
  // "did not wait" then sees the producer's data).
  delay_stream(producer, 1.0);
  fill_uniform_device(data.data(), n, 7, 1.0f, 2.0f, producer);
  CUDALAB_CHECK(cudaMemcpyAsync(copy_not_waited.data(), data.data(), data.bytes(),
                                cudaMemcpyDeviceToDevice, consumer));
  // copy_not_waited keeps the fill's values from the warm-up: only the copy below can turn it to
  // poison, so a poisoned copy shows that copy ran, and ran early.
  CUDALAB_CHECK(cudaDeviceSynchronize());
  poison_device(data.data(), data.bytes());
  CUDALAB_CHECK(cudaDeviceSynchronize());
  Event ready(cudaEventDisableTiming);
  delay_stream(producer, kOrderingDelayUs);
  fill_uniform_device(data.data(), n, 7, 1.0f, 2.0f, producer);
  ready.record(producer);
  // Not waiting: the copy runs while the producer is still held by the delay.
  CUDALAB_CHECK(cudaMemcpyAsync(copy_not_waited.data(), data.data(), data.bytes(),
                                cudaMemcpyDeviceToDevice, consumer));
  CUDALAB_CHECK(cudaStreamSynchronize(consumer));
  EXPECT_EQ(cudaEventQuery(ready), cudaErrorNotReady)
      << "the producer finished within the consumer's copy: the delay did not hold it";
  (void)cudaGetLastError();  // "not ready" is an answer, not an error for the next check
  // Waiting on the event: the fill's values.
  CUDALAB_CHECK(cudaStreamWaitEvent(consumer, ready, 0));
  CUDALAB_CHECK(cudaMemcpyAsync(copy_waited.data(), data.data(), data.bytes(),
                                cudaMemcpyDeviceToDevice, consumer));
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const auto stale = copy_not_waited.to_host(), fresh = copy_waited.to_host();
  std::size_t poisoned = 0;
  for (const float x : stale) poisoned += is_poison(x) ? 1 : 0;
  EXPECT_EQ(poisoned, n) << "the copy that did not wait saw the producer's data";
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(fresh[i], uniform_at(7, i, 1.0f, 2.0f)) << "the copy that waited, index " << i;
}

TEST(ContentionGpu, RunsBesideAKernelWithoutChangingIt) {
  CUDALAB_REQUIRE_GPU();
  cudalab::testing::expect_throws_naming([] { Contention c(0); }, "words");
  Contention contention;
  cudalab::testing::expect_throws_naming([&] { contention.run(nullptr, 10.0, 0); }, "blocks");
  Stream side, main;
  const std::size_t n = 1 << 20;
  DeviceBuffer<float> x(n);
  contention.run(side, 2000.0, 8);
  fill_uniform_device(x.data(), n, 11, -1.0f, 1.0f, main);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const auto got = x.to_host();
  for (std::size_t i = 0; i < n; i += 4099) ASSERT_EQ(got[i], uniform_at(11, i, -1.0f, 1.0f));
}
