#include "idempay/config/store_location.hpp"

#include <filesystem>

#include <spdlog/spdlog.h>

#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/stored_form.hpp"

namespace idempay::config {

Result<StoreLocation> parse_store_location(const std::string& store, const std::string& data_dir) {
  auto starts_with = [&](std::string_view prefix) { return store.rfind(prefix, 0) == 0; };
  if (store.empty()) {
    return StoreLocation{StoreLocation::Kind::kRocks, (std::filesystem::path(data_dir) / "rocksdb").string()};
  }
  if (starts_with("rocksdb:")) {
    return StoreLocation{StoreLocation::Kind::kRocks, store.substr(8)};
  }
  if (store == "postgresql:" || store == "postgres:") {
    return StoreLocation{StoreLocation::Kind::kPostgres, ""};
  }
  if (starts_with("postgresql://") || starts_with("postgres://")) {
    return StoreLocation{StoreLocation::Kind::kPostgres, store};
  }
  return make_error(ErrorCode::kInvalidArgument, "--store must be rocksdb:DIR or postgresql://... (a libpq URI)");
}

namespace {

Result<std::unique_ptr<storage::Store>> open_store(const StoreLocation& at, bool read_only, bool migrate) {
  if (at.kind == StoreLocation::Kind::kPostgres) {
    storage::PostgresOptions options;
    options.uri = at.where;
    options.read_only = read_only;
    options.migrate = migrate;
    return storage::open_postgres_store(options, domain::keyspace_names());
  }
  storage::RocksOptions options{at.where, true, read_only};
  options.memtable_bytes = at.memtable_bytes;
  options.read_only_existing_keys = domain::keyspaces_read_only_for_existing_keys();
  return storage::open_rocks_store(options, domain::keyspace_names());
}

}  // namespace

Result<std::unique_ptr<storage::Store>> open_store_at(const StoreLocation& at, bool read_only, bool migrate) {
  auto store = open_store(at, read_only, migrate);
  if (!store || read_only) {
    return store;  // the tools read every format this release knows
  }
  if (!migrate) {
    if (auto current = domain::require_current_format(**store); !current) {
      return tl::unexpected(current.error());
    }
    return store;
  }
  auto migrated = domain::migrate_stored_form(**store);
  if (!migrated) {
    return tl::unexpected(migrated.error());
  }
  if (migrated->from != 0 && migrated->from != domain::kStoredFormat) {
    spdlog::info("store: stored form migrated from format {} to {} ({} keys of the old form removed)", migrated->from,
                 domain::kStoredFormat, migrated->removed);
  }
  return store;
}

std::string describe(const StoreLocation& at) {
  return at.kind == StoreLocation::Kind::kPostgres ? std::string("PostgreSQL") : "RocksDB in " + at.where;
}

}  // namespace idempay::config
