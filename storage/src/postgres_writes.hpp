#pragma once
// The writes of one PostgreSQL commit group as a few set-based statements instead of one
// statement per write. PostgreSQL parses, plans and starts an executor for every statement
// of a simple query; for rows of a few hundred bytes that was most of its CPU per payment
// (nine writes per Create Payment). Here each table and kind of write is one statement over
// arrays of keys, values and etags (unnest), whatever the number of rows.
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idempay/storage/store.hpp"

namespace idempay::storage {

/// `bytes` as a bytea literal ('\x..', hex digits only): nothing taken from a request can
/// reach a statement's text otherwise.
std::string bytea_literal(std::string_view bytes);

/// One statement of a group, and the rows it must touch in all (-1: any number).
struct GroupStatement {
  std::string sql;
  long expected_rows = -1;
};

/// Collects a group's writes, in commit order, as statements.
///
/// A statement may touch a row only once (PostgreSQL refuses ON CONFLICT DO UPDATE twice on
/// one row, and an UPDATE .. FROM would apply only one of two source rows), so a write of a
/// key already collected ends the current round: its statements come first, and the write
/// starts the next round. Within a round every key is distinct, so the statements' order
/// does not matter.
class GroupStatements {
public:
  /// `tables[i]` names keyspace i's table (trusted identifiers).
  explicit GroupStatements(const std::vector<std::string>& tables) : tables_(tables) {}

  /// Adds `w`, which found the key at etag `previous` (0: absent) and leaves it at `etag`.
  /// `checked`: the write is conditional, so its row must be touched exactly as expected.
  void add(const Write& w, bool checked, uint64_t previous, uint64_t etag);

  /// The statements, in the order they must run; the collector starts empty again.
  std::vector<GroupStatement> take();

private:
  enum class Kind { kUpsert, kInsertIfAbsent, kSwap, kDeleteAny, kDeleteIfAt };
  // The rows of one table and kind, as comma-separated SQL literals per column.
  struct Rows {
    std::string keys, values, etags, previous;
    long count = 0;
  };

  void end_round();
  GroupStatement statement(size_t keyspace, Kind kind, const Rows& rows) const;

  const std::vector<std::string>& tables_;
  std::map<std::pair<size_t, Kind>, Rows> round_;
  std::set<std::pair<size_t, std::string>> keys_in_round_;
  std::vector<GroupStatement> done_;
};

}  // namespace idempay::storage
