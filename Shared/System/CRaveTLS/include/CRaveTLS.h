#ifndef C_RAVE_TLS_H
#define C_RAVE_TLS_H

// OpenSSL's macros as functions, so Swift can call them.

#include <openssl/ssl.h>
#include <openssl/x509.h>

int rave_ssl_ctx_set_min_tls12(SSL_CTX *ctx);
int rave_ssl_ctx_set_min_tls(SSL_CTX *ctx, int version);
int rave_ssl_ctx_set_max_tls(SSL_CTX *ctx, int version);
int rave_ssl_set_sni(SSL *ssl, const char *host_name);
long rave_ssl_ctx_set_mode_defaults(SSL_CTX *ctx);
int rave_tls1_1_version(void);
int rave_tls1_2_version(void);
int rave_tls1_3_version(void);
int rave_ssl_ctx_set_verify_peer(SSL_CTX *ctx, int require_certificate);
int rave_ssl_error_want_read(void);
int rave_ssl_error_want_write(void);
int rave_ssl_error_zero_return(void);
int rave_ssl_error_syscall(void);
int rave_ssl_error_ssl(void);
/// Sets the host name (or IP address literal) the peer certificate must match.
int rave_ssl_set_expected_host(SSL *ssl, const char *host);
/// Writes the URIs of the certificate's subjectAltName, each followed by '\n', into `buffer` (at most `capacity`
/// bytes). Returns the bytes written, or -1 when they do not fit; 0 when there are none.
int rave_x509_san_uris(X509 *certificate, char *buffer, int capacity);
/// Restricts TLS 1.2 to ECDHE key exchange with AEAD ciphers (AES-GCM, ChaCha20-Poly1305); TLS 1.3 is unaffected.
int rave_ssl_ctx_set_tls12_aead_only(SSL_CTX *ctx);
/// Servers: selects the first of `protocols` (ALPN wire format: each name preceded by its length) that the client
/// offers; a client offering none of them gets no ALPN answer. The context keeps its own copy (freed with it).
/// Returns 1, or 0 when out of memory.
int rave_ssl_ctx_set_alpn_server(SSL_CTX *ctx, const unsigned char *protocols, unsigned int length);

#endif
