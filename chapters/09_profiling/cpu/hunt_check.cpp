// The comparison every bug-hunt case uses (include/ch09/hunt.hpp).
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "ch09/hunt.hpp"

namespace cudalab::ch09 {

std::string first_mismatch(const std::vector<float>& got, const std::vector<float>& want,
                           float tol) {
  if (got.size() != want.size()) {
    std::ostringstream s;
    s << "size " << got.size() << ", want " << want.size();
    return s.str();
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol)) {  // NaN fails too
      std::ostringstream s;
      s << "i = " << i << ": got " << got[i] << ", want " << want[i];
      return s.str();
    }
  }
  return {};
}

}  // namespace cudalab::ch09
