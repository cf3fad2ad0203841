#pragma once
// The PostgreSQL server tests run against: IDEMPAY_TEST_PG_URI (scripts/test.sh starts a
// throwaway cluster with scripts/pg-local.sh); empty when there is none.
#include <libpq-fe.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>

namespace idempay::testing {

inline std::string postgres_uri() {
  const char* uri = std::getenv("IDEMPAY_TEST_PG_URI");
  return uri == nullptr ? std::string() : std::string(uri);
}

/// A schema name no other test (process) uses.
inline std::string unique_schema() {
  static std::atomic<int> counter{0};
  std::random_device random;
  return "t" + std::to_string(random()) + "_" + std::to_string(counter++);
}

/// Runs one statement; the first column of its first row, if any. Throws on failure.
inline std::string run_sql(const std::string& uri, const std::string& sql) {
  PGconn* c = PQconnectdb(uri.c_str());
  PGresult* r = PQexec(c, sql.c_str());
  auto status = PQresultStatus(r);
  std::string out = status == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "";
  std::string error = PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(c);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    throw std::runtime_error("sql failed: " + error);
  }
  return out;
}

}  // namespace idempay::testing
