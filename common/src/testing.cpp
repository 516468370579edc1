#include "cudalab/testing.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string_view>

#include "cudalab/check.hpp"
#include "cudalab/device.hpp"

namespace cudalab::testing {
namespace {

void check_suite_label() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return;
  const std::string_view suite = info->test_suite_name();
  if (!suite.ends_with("Gpu"))
    ADD_FAILURE() << "test suite '" << suite
                  << "' needs a GPU but its name does not end in 'Gpu': ctest would label it cpu "
                     "and CI would run it. Rename the suite (e.g. '"
                  << suite << "Gpu').";
}

}  // namespace

std::string gpu_skip_reason() {
  check_suite_label();
  if (has_gpu()) return {};
  return "skipped: " + no_gpu_reason();
}

CapturedLaunches capture_launches(const std::function<void(cudaStream_t)>& launch) {
  cudaStream_t stream = nullptr;
  CUDALAB_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  CUDALAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  try {
    launch(stream);
  } catch (...) {
    (void)cudaStreamEndCapture(stream, &graph);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaStreamDestroy(stream);
    throw;
  }
  CUDALAB_CHECK(cudaStreamEndCapture(stream, &graph));
  std::size_t count = 0;
  CUDALAB_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count != 0) CUDALAB_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  CapturedLaunches out;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CUDALAB_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) {
      cudaKernelNodeParams params{};
      CUDALAB_CHECK(cudaGraphKernelNodeGetParams(node, &params));
      CapturedKernel k;
      CUDALAB_CHECK(cudaFuncGetAttributes(&k.attr, params.func));
      k.dynamic_shared = params.sharedMemBytes;
      k.grid = params.gridDim;
      k.block = params.blockDim;
      out.kernels.push_back(k);
    } else if (type == cudaGraphNodeTypeMemset) {
      ++out.memsets;
    } else if (type == cudaGraphNodeTypeMemcpy) {
      ++out.copies;
    } else {
      ++out.other;
    }
  }
  CUDALAB_CHECK(cudaGraphDestroy(graph));
  CUDALAB_CHECK(cudaStreamDestroy(stream));
  return out;
}

void replay_from_capture(const std::function<void(cudaStream_t)>& launch,
                         const std::function<void()>& reset) {
  cudaStream_t stream = nullptr;
  CUDALAB_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  const auto release = [&] {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaStreamDestroy(stream);
  };
  try {
    // A warm-up run with nothing captured: the first launch of a kernel may load its module
    // (CUDA_MODULE_LOADING=LAZY) and a library its workspace, neither of which a capture records.
    launch(stream);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    CUDALAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
    try {
      launch(stream);
    } catch (...) {
      (void)cudaStreamEndCapture(stream, &graph);
      throw;
    }
    CUDALAB_CHECK(cudaStreamEndCapture(stream, &graph));
    // Whatever escaped the capture ran (or runs) now: let it finish before the outputs are reset.
    CUDALAB_CHECK(cudaDeviceSynchronize());
    reset();
    CUDALAB_CHECK(cudaDeviceSynchronize());
    CUDALAB_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDALAB_CHECK(cudaGraphLaunch(exec, stream));
    CUDALAB_CHECK(cudaStreamSynchronize(stream));
  } catch (...) {
    release();
    throw;
  }
  release();
}

LargeTestLock::LargeTestLock() {
  std::error_code ec;
  const auto dir = std::filesystem::temp_directory_path(ec);
  const std::string path = (ec ? std::filesystem::path("/tmp") : dir).string() +
                           "/cudalab-large-gpu-tests-" +
                           std::to_string(static_cast<long>(::getuid())) + ".lock";
  fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ < 0) return;  // no lock file: run unserialized rather than not at all
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) break;
  }
}

LargeTestLock::~LargeTestLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

std::string memory_skip_reason(std::size_t bytes) {
  if (auto r = gpu_skip_reason(); !r.empty()) return r;
  std::size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    (void)cudaGetLastError();
    return "skipped: cudaMemGetInfo failed";
  }
  if (free_b < bytes)
    return fmt::format("skipped: needs {:.1f} GB of free device memory, {:.1f} GB free",
                       bytes / 1e9, free_b / 1e9);
  return {};
}

std::string arch_skip_reason(int major, int minor) {
  if (auto r = gpu_skip_reason(); !r.empty()) return r;
  const DeviceInfo d = device_info();
  if (d.cc_major * 10 + d.cc_minor < major * 10 + minor)
    return fmt::format("skipped: needs compute capability {}.{}, this {} is {}.{}", major, minor,
                       d.name, d.cc_major, d.cc_minor);
  return {};
}

}  // namespace cudalab::testing
