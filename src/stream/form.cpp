#include <grafx/error.h>
#include <grafx/stream/form.h>

#include <map>
#include <mutex>

namespace grafx {
namespace {

struct Registered {
  const char* name;
  FormLoader load;
};

/// The loaders by kind, filled by the forms' files as the program starts.
std::map<int32_t, Registered>& loaders() {
  static std::map<int32_t, Registered> registered;
  return registered;
}

}  // namespace

bool register_form(int32_t kind, const char* name, FormLoader load) {
  auto [at, added] = loaders().emplace(kind, Registered{name, load});
  if (!added)  // two forms of one number: a programming error, found when the program starts
    throw std::logic_error(std::string("form kinds ") + at->second.name + " and " + name +
                           " have the same number");
  return true;
}

void write_controls(StreamWriter& out, const std::vector<StreamControl>& controls) {
  out.write(uint64_t(controls.size()));
  for (const StreamControl& c : controls) {
    out.write(c.name), out.write(c.unit), out.write(c.description);
    out.write(c.minimum), out.write(c.maximum), out.write(c.value);
  }
}

std::vector<StreamControl> read_controls(StreamReader& in) {
  std::vector<StreamControl> controls(size_t(in.read_count(0, 1 << 16)));
  for (StreamControl& c : controls) {
    c.name = in.read_string(), c.unit = in.read_string(), c.description = in.read_string();
    c.minimum = in.read_bound(), c.maximum = in.read_bound(), c.value = in.read<double>();
    if (!(c.minimum <= c.value && c.value <= c.maximum)) in.corrupt("a control out of its range");
  }
  return controls;
}

std::unique_ptr<NodeStream> load_node_stream(StreamReader& in, int64_t max_block) {
  const int32_t kind = in.read<int32_t>();
  auto found         = loaders().find(kind);
  if (found == loaders().end()) in.corrupt("an unknown kind of streaming form");
  return found->second.load(in, max_block);
}

}  // namespace grafx
