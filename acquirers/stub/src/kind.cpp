// The kind "stub": the in-process stub (no settings of its own), one for every entry of it.
#include "idempay/acquirers/stub.hpp"

namespace idempay::acquirer {

namespace {

struct StubSettings final : Settings {
  std::string identity() const override { return "stub"; }
};

}  // namespace

const Kind& stub_kind() {
  static const Kind kind{"stub",
                         [](const JsonValue& entry, const std::vector<std::string>&,
                            const std::string& where) -> Result<std::shared_ptr<const Settings>> {
                           if (auto known = only_known_fields(entry, {}, where); !known) {
                             return tl::unexpected(known.error());
                           }
                           return std::make_shared<StubSettings>();
                         },
                         [](const Settings&, const Environment& env) { return env.stub(); },
                         nullptr,
                         {}};
  return kind;
}

}  // namespace idempay::acquirer
