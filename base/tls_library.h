// OpenSSL's process lifetime. By default OpenSSL 3 frees its global state from an atexit
// handler, which runs before the static destructors registered earlier: cpprest's thread pool
// (a static) then joins an I/O thread that is still freeing a TLS context and spins forever on
// a lock OpenSSL already freed (seen as an integration test that passed and never exited, and
// an operator could hang the same way on SIGTERM). KeepTlsLibraryUntilExit tells OpenSSL to skip
// that handler; the OS reclaims the memory at exit. It must run before OpenSSL's first
// initialization: the libraries that open TLS connections (the REST client, the LLM client)
// call it from a static initializer, before main (a later call changes nothing).
// Idempotent; thread-safe.
#ifndef PARATUNE_BASE_TLS_LIBRARY_H_
#define PARATUNE_BASE_TLS_LIBRARY_H_

namespace paratune {

void KeepTlsLibraryUntilExit();

}  // namespace paratune

#endif  // PARATUNE_BASE_TLS_LIBRARY_H_
