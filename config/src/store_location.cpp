#include "idempay/config/store_location.hpp"

#include <filesystem>

#include "idempay/domain/keyspaces.hpp"

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

Result<std::unique_ptr<storage::Store>> open_store_at(const StoreLocation& at, bool read_only, bool migrate) {
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

std::string describe(const StoreLocation& at) {
  return at.kind == StoreLocation::Kind::kPostgres ? std::string("PostgreSQL") : "RocksDB in " + at.where;
}

}  // namespace idempay::config
