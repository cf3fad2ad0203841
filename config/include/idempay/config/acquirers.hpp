#pragma once
// A merchant's acquirers (the merchants file's "acquirers" list; docs/acquirers.md): each
// named, of a kind, serving some payment methods or all the others. A payment keeps the one it
// was created with, by name, through reloads, restarts and other instances. What an entry
// holds beyond that is its kind's to read (acquirers/extension.hpp): this library knows no kind.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/acquirers/extension.hpp"
#include "idempay/base/error.hpp"
#include "idempay/base/json_read.hpp"

namespace idempay::config {

/// The kinds the merchants file may name, as the connector is built with them.
using AcquirerKinds = std::vector<const acquirer::Kind*>;

struct AcquirerEntry {
  std::string name;                  ///< unique within the merchant: [A-Za-z0-9_-]{1,64}
  const acquirer::Kind* kind = nullptr;
  std::vector<std::string> methods;  ///< the methods it serves; empty: every method no other entry names
  std::shared_ptr<const acquirer::Settings> settings;  ///< as its kind read them
};

/// The stored route of a merchant's named acquirer ("@" + name): what a payment keeps.
std::string named_route(std::string_view name);
/// The name in such a route; empty for any other route ("stub", a URL).
std::string_view route_name(std::string_view route);

/// Reads and checks a merchant's "acquirers" list: each entry's name and a kind among `kinds`
/// (which reads the rest), names unique, each method a known one served by one entry at most,
/// at most one entry without methods. kInvalidArgument naming the place.
Result<std::vector<AcquirerEntry>> read_acquirers(const JsonValue& list, const std::string& where,
                                                  const AcquirerKinds& kinds);

/// The entry serving `method`: the one naming it, else the one naming none; null if neither.
const AcquirerEntry* acquirer_for(const std::vector<AcquirerEntry>& entries, std::string_view method);
const AcquirerEntry* acquirer_named(const std::vector<AcquirerEntry>& entries, std::string_view name);

}  // namespace idempay::config
