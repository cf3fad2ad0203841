#pragma once
// Where the connector's store is: `--store rocksdb:DIR` (the default: DATA_DIR/rocksdb) or
// `--store postgresql://...` (a libpq URI; `postgresql:` alone uses the libpq environment
// variables, which keeps a password off the command line). Shared by `serve`, `migrate` and
// the operator commands.
#include <memory>
#include <string>

#include "idempay/base/error.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::config {

struct StoreLocation {
  enum class Kind { kRocks, kPostgres } kind = Kind::kRocks;
  std::string where;  ///< the RocksDB directory, or the libpq URI (may hold a password: never log it)
  size_t memtable_bytes = 16u << 20;  ///< RocksDB: storage::RocksOptions::memtable_bytes
};

/// kInvalidArgument for a URI of another kind.
Result<StoreLocation> parse_store_location(const std::string& store, const std::string& data_dir);

/// `read_only`: for tools on a running connector's store (no lock; commits refused; every
/// stored format this release knows is read as it is).
/// `migrate`: PostgreSQL's schema is created or upgraded first, then the stored form brought to
/// this release's format (domain/stored_form.hpp); without it a store of another format is
/// refused (kIllegalState).
Result<std::unique_ptr<storage::Store>> open_store_at(const StoreLocation& at, bool read_only, bool migrate = true);

/// What a log line may say about the store: the kind and, for RocksDB, the directory.
std::string describe(const StoreLocation& at);

}  // namespace idempay::config
