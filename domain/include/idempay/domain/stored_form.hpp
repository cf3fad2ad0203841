#pragma once
// The stored form's version. A store records the format it holds (Space::kMeta "format");
// one without the key holds format 1, written before formats were numbered.
//
//   1  one key per audit entry, a copy of each chain's head ("<paymentId>/~head"), and every
//      payment in flight named in the recovery index by the batch that made it so.
//   2  a batch's entries for one payment under one key (a JSON array), the head found as the
//      last entry, and a payment's own changes to the recovery index carried by its queue
//      entry for the log (QueuedHead) until the sequencer takes it: six keys per create
//      instead of eleven.
//
// This release reads both: migrating removes what format 2 no longer keeps (the heads' copies,
// which it never updates) and records the format. A release that finds a newer format refuses
// to open the store rather than misread it.
#include <cstdint>
#include <string_view>

#include "idempay/base/error.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::domain {

inline constexpr int64_t kStoredFormat = 2;
/// Where a store records its format, in Space::kMeta.
inline constexpr std::string_view kFormatKey = "format";

/// The format the store holds; kUnavailable on a read failure.
Result<int64_t> stored_format(storage::Store& store);

/// What a migration did.
struct Migration {
  int64_t from = 0;  ///< the format found; 0 for a new store
  size_t removed = 0;  ///< keys of the older form removed
};

/// Brings the store to kStoredFormat. Idempotent: a run killed anywhere leaves a store this
/// release reads correctly, and the next run finishes it (the format is recorded last).
/// kIllegalState for a store of a newer format. Run with no instance of an older
/// release serving from the store: that one would still keep the heads' copies.
Result<Migration> migrate_stored_form(storage::Store& store);

/// kIllegalState unless the store holds kStoredFormat (for `serve --no-migrate`).
Status require_current_format(storage::Store& store);

}  // namespace idempay::domain
