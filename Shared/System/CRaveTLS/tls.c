#include "CRaveTLS.h"

#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int rave_ssl_ctx_set_min_tls12(SSL_CTX *ctx) { return SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }

int rave_ssl_ctx_set_min_tls(SSL_CTX *ctx, int version) { return SSL_CTX_set_min_proto_version(ctx, version); }

int rave_ssl_ctx_set_max_tls(SSL_CTX *ctx, int version) { return SSL_CTX_set_max_proto_version(ctx, version); }

int rave_ssl_set_sni(SSL *ssl, const char *host_name) { return SSL_set_tlsext_host_name(ssl, host_name); }

long rave_ssl_ctx_set_mode_defaults(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                     SSL_MODE_RELEASE_BUFFERS);
}

int rave_tls1_1_version(void) { return TLS1_1_VERSION; }
int rave_tls1_2_version(void) { return TLS1_2_VERSION; }
int rave_tls1_3_version(void) { return TLS1_3_VERSION; }

int rave_ssl_ctx_set_verify_peer(SSL_CTX *ctx, int require_certificate) {
    int mode = SSL_VERIFY_PEER;
    if (require_certificate) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(ctx, mode, NULL);
    return 1;
}

int rave_ssl_error_want_read(void) { return SSL_ERROR_WANT_READ; }
int rave_ssl_error_want_write(void) { return SSL_ERROR_WANT_WRITE; }
int rave_ssl_error_zero_return(void) { return SSL_ERROR_ZERO_RETURN; }
int rave_ssl_error_syscall(void) { return SSL_ERROR_SYSCALL; }
int rave_ssl_error_ssl(void) { return SSL_ERROR_SSL; }

int rave_ssl_set_expected_host(SSL *ssl, const char *host) {
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
    ASN1_OCTET_STRING *ip = a2i_IPADDRESS(host);
    if (ip != NULL) {
        ASN1_OCTET_STRING_free(ip);
        return X509_VERIFY_PARAM_set1_ip_asc(param, host);
    }
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return X509_VERIFY_PARAM_set1_host(param, host, strlen(host));
}

int rave_x509_san_uris(X509 *certificate, char *buffer, int capacity) {
    GENERAL_NAMES *names = X509_get_ext_d2i(certificate, NID_subject_alt_name, NULL, NULL);
    if (names == NULL) return 0;
    int written = 0;
    for (int index = 0; index < sk_GENERAL_NAME_num(names); index++) {
        const GENERAL_NAME *name = sk_GENERAL_NAME_value(names, index);
        if (name->type != GEN_URI) continue;
        const ASN1_IA5STRING *uri = name->d.uniformResourceIdentifier;
        int length = ASN1_STRING_length(uri);
        if (length < 0 || written + length + 1 > capacity) {
            GENERAL_NAMES_free(names);
            return -1;
        }
        memcpy(buffer + written, ASN1_STRING_get0_data(uri), (size_t)length);
        written += length;
        buffer[written++] = '\n';
    }
    GENERAL_NAMES_free(names);
    return written;
}

int rave_ssl_ctx_set_tls12_aead_only(SSL_CTX *ctx) {
    return SSL_CTX_set_cipher_list(ctx,
                                   "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                                   "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                                   "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305");
}

// MARK: - ALPN (servers)

struct rave_alpn {
    unsigned int length;
    unsigned char protocols[];
};

static int rave_alpn_index = -1;
static pthread_once_t rave_alpn_once = PTHREAD_ONCE_INIT;

static void rave_alpn_free(void *parent, void *pointer, CRYPTO_EX_DATA *data, int index, long argl, void *argp) {
    (void)parent, (void)data, (void)index, (void)argl, (void)argp;
    free(pointer);
}

static void rave_alpn_make_index(void) {
    rave_alpn_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, rave_alpn_free);
}

static int rave_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *out_length, const unsigned char *in,
                            unsigned int in_length, void *argument) {
    (void)ssl;
    const struct rave_alpn *alpn = argument;
    unsigned char *selected = NULL;
    if (SSL_select_next_proto(&selected, out_length, alpn->protocols, alpn->length, in, in_length) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
}

int rave_ssl_ctx_set_alpn_server(SSL_CTX *ctx, const unsigned char *protocols, unsigned int length) {
    pthread_once(&rave_alpn_once, rave_alpn_make_index);
    if (rave_alpn_index < 0) return 0;
    struct rave_alpn *copy = malloc(sizeof(struct rave_alpn) + length);
    if (copy == NULL) return 0;
    copy->length = length;
    memcpy(copy->protocols, protocols, length);
    // Owned by the context: freed when its last reference goes, after every session's handshake.
    if (!SSL_CTX_set_ex_data(ctx, rave_alpn_index, copy)) {
        free(copy);
        return 0;
    }
    SSL_CTX_set_alpn_select_cb(ctx, rave_alpn_select, copy);
    return 1;
}
