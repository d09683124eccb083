// libcurl for the push service's HTTP/2 client (RaveHTTPClient) and identity's SMTP sender (RaveMail).
// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift cannot call, so each argument type gets a typed inline wrapper here.
#ifndef RAVE_CCURL_SHIM_H
#define RAVE_CCURL_SHIM_H
#include <curl/curl.h>

typedef size_t (*rave_curl_data_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode rave_curl_easy_set_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode rave_curl_easy_set_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode rave_curl_easy_set_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode rave_curl_easy_set_list(CURL *easy, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode rave_curl_easy_set_callback(CURL *easy, CURLoption option, rave_curl_data_callback value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode rave_curl_easy_get_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}
static inline CURLcode rave_curl_easy_get_pointer(CURL *easy, CURLINFO info, void **value) {
    return curl_easy_getinfo(easy, info, value);
}
static inline CURLMcode rave_curl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
#endif
