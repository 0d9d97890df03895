/*
 * Mutual challenge-response on a fresh connection, before any other byte is
 * trusted. Both ends prove they hold the unique id's secret by an HMAC-SHA256
 * of the other's fresh nonce; the secret itself never crosses the wire.
 *
 *   connector -> AUTH_HELLO      job id, role, nonce_c
 *   acceptor  -> AUTH_CHALLENGE  nonce_a, HMAC(secret, "A" job nonce_c nonce_a)
 *   connector -> AUTH_PROOF      HMAC(secret, "C" job nonce_a nonce_c)
 * A refusal is an AUTH_FAIL frame with the reason, then close.
 */
#ifndef COLL_AUTH_H
#define COLL_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "uid.h"

/* Authenticate as the connecting side. err gets a one-line reason on failure. */
int auth_connect(int fd, const struct coll_uid *uid, uint8_t role, uint64_t deadline_ms,
    int abort_fd, char *err, size_t errlen);
/* Authenticate as the accepting side; *role gets what the peer asked for. */
int auth_accept(int fd, const struct coll_uid *uid, uint8_t *role, uint64_t deadline_ms,
    int abort_fd, char *err, size_t errlen);
/* The MAC both sides compute; exposed for tests. */
void auth_mac(const struct coll_uid *uid, char side, const uint8_t *n1, const uint8_t *n2,
    uint8_t out[32]);

#endif
