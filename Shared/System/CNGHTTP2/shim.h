// libnghttp2's server session API, for the HTTP/2 side of RaveHTTP (the gateway's HTTP/JSON front door).
#ifndef RAVE_CNGHTTP2_SHIM_H
#define RAVE_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
#endif
