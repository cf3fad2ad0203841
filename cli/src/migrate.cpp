// `idempay migrate --store postgresql://...`.
#include <iostream>

#include "idempay/cli/commands.hpp"
#include "idempay/config/store_location.hpp"
#include "idempay/domain/keyspaces.hpp"

namespace idempay::cli {

namespace {

int migrate(const std::string& store) {
  auto at = config::parse_store_location(store, "");
  if (!at || at->kind != config::StoreLocation::Kind::kPostgres) {
    std::cerr << "migrate: --store must name a PostgreSQL database (postgresql://...); RocksDB needs no migration\n";
    return 2;
  }
  storage::PostgresOptions options;
  options.uri = at->where;
  if (auto done = storage::migrate_postgres_store(options, domain::keyspace_names()); !done) {
    std::cerr << "migrate: " << done.error().message << "\n";
    return 1;
  }
  std::cout << "the schema is up to date\n";
  return 0;
}

}  // namespace

Command add_migrate(CLI::App& root) {
  auto store = std::make_shared<std::string>();
  auto* command = root.add_subcommand("migrate", "create or upgrade the PostgreSQL schema (serve also does it at start)");
  command->add_option("--store", *store, "postgresql://... (a libpq URI)")->envname("IDEMPAY_STORE")->required();
  return {command, [store] { return migrate(*store); }};
}

}  // namespace idempay::cli
