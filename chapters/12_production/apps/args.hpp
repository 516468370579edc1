// Command-line parsing shared by chapter 12's programs: --name value pairs, every value checked,
// a bad one reported by name (exit status 2 in the callers), never a crash.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

namespace cudalab::ch12 {

class Args {
 public:
  // `known`: the accepted option names without "--", each mapped to its default ("" = none).
  Args(int argc, char** argv, std::map<std::string, std::string> known) : v_(std::move(known)) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) != 0 || !v_.count(a.substr(2)))
        throw std::invalid_argument("unknown argument '" + a + "'");
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      v_[a.substr(2)] = argv[++i];
    }
  }
  const std::string& str(const std::string& k) const { return v_.at(k); }
  std::uint64_t u64(const std::string& k) const {
    const std::string& s = v_.at(k);
    std::size_t used = 0;
    unsigned long long x = 0;
    try {
      x = std::stoull(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size() || s[0] == '-')
      throw std::invalid_argument("--" + k + " " + s + ": not a non-negative integer");
    return x;
  }
  double real(const std::string& k) const {
    const std::string& s = v_.at(k);
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size())
      throw std::invalid_argument("--" + k + " " + s + ": not a number");
    return x;
  }

 private:
  std::map<std::string, std::string> v_;
};

}  // namespace cudalab::ch12
