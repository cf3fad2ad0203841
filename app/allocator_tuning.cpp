// jemalloc's settings for the service, read by jemalloc before main() (MALLOC_CONF in the
// environment still overrides them). Compiled into the executable only when it links jemalloc.
//
// By default jemalloc returns freed pages to the kernel ten seconds after they fall idle, and
// only while the freeing thread calls into the allocator again: under sustained creates the
// connector's RSS held a tenth more than it used. A background thread purges dirty pages after
// a second instead, and the lazily freed ("muzzy") stage is skipped: the pages go back at once.
extern "C" {
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): jemalloc's documented hook
const char* malloc_conf = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
