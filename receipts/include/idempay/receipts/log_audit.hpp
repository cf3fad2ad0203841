#pragma once
// `idempay audit verify`'s part for the transparency log: the log replayed from its leaves and
// checked against the audit chains, its stored nodes, its tree heads and their signatures.
#include <string>
#include <vector>

#include "idempay/base/error.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::receipts {

/// One break in the log, with its place ("leaf 17", "tree head 120", "the right edge").
struct LogProblem {
  std::string place;
  std::string problem;
};

/// Every leaf in order: its hash, its index entry, the audit entry it names (present, with that
/// hash); every complete subtree stored as the leaves give it; the right edge; every tree head's
/// root at its size, and each of its signatures by a published key over exactly that head.
/// Empty when the log is whole. Reads the whole log: for the offline tool.
Result<std::vector<LogProblem>> verify_log(storage::Store& store);

}  // namespace idempay::receipts
