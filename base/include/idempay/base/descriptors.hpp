#pragma once
// The process's descriptor limit, shared out between its parts: inbound connections take at
// most half (http::ServerOptions::max_connections' default), outbound connections a quarter
// (the HTTP clients' connection budget), the store's open table files an eighth; the rest is
// for the store's write-ahead logs, new tables and the process's own files. A store that
// cannot open its next log stops writing, so no part may take the others' share.
#include <cstddef>

namespace idempay {

/// `limit / divisor` of the soft descriptor limit, within [at_least, at_most]; `at_most` when
/// the limit is unknown or unlimited.
size_t descriptor_share(size_t divisor, size_t at_least, size_t at_most);

}  // namespace idempay
