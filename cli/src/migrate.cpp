// `idempay migrate [--data-dir DIR | --store URI]`: a store brought to this release's form.
#include <iostream>

#include "idempay/cli/commands.hpp"
#include "idempay/config/store_location.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/stored_form.hpp"
#include "store_access.hpp"

namespace idempay::cli {

namespace {

int migrate(const StoreOptions& where) {
  auto at = config::parse_store_location(where.store, where.data_dir);
  if (!at) {
    return failed(at.error(), 2);
  }
  if (at->kind == config::StoreLocation::Kind::kPostgres) {
    storage::PostgresOptions options;
    options.uri = at->where;
    if (auto done = storage::migrate_postgres_store(options, domain::keyspace_names()); !done) {
      return failed(Error{done.error().code, "migrate: " + done.error().message});
    }
    std::cout << "the schema is up to date\n";
  }
  // Opening it for writing migrates it (and says so); for RocksDB the directory's lock keeps a
  // running connector out meanwhile.
  auto store = config::open_store_at(*at, false, true);
  if (!store) {
    return failed(Error{store.error().code, "migrate: " + store.error().message});
  }
  auto format = domain::stored_format(**store);
  if (!format) {
    return failed(Error{format.error().code, "migrate: " + format.error().message});
  }
  std::cout << "the store holds format " << *format << "\n";
  return 0;
}

}  // namespace

Command add_migrate(CLI::App& root) {
  auto where = std::make_shared<StoreOptions>();
  auto* command = root.add_subcommand(
      "migrate", "bring a store to this release's form: the PostgreSQL schema and the stored format (serve also does it at start)");
  add_store_options(*command, *where);
  return {command, [where] { return migrate(*where); }};
}

}  // namespace idempay::cli
