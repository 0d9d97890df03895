/*
 * Mutual challenge-response on a fresh connection, before any other byte is
 * trusted. Both ends prove they hold the unique id's secret by an HMAC-SHA256
 * of the other's fresh nonce; the secret itself never crosses the wire.
 *
 *   connector -> AUTH_HELLO      job id, role, nonce_c
 *   acceptor  -> AUTH_CHALLENGE  nonce_a, MAC('A')
 *   connector -> AUTH_PROOF      MAC('C')
 *
 *   MAC(side) = HMAC-SHA256(secret, "coll-auth" side job role nonce_c nonce_a)
 *
 * Both MACs cover the same transcript (the role the connector asked for too,
 * so it cannot be changed on the way) and differ only in the side byte: that
 * byte is what stops reflection, i.e. the acceptor's own challenge MAC sent
 * back to it as the connector's proof, or a connector's MAC passed off as an
 * acceptor's. The acceptor's fresh nonce stops replay of a recorded proof.
 * A refusal is an AUTH_FAIL frame with the reason, then close. A failure of
 * libcrypto or of the kernel's random source fails the handshake (COLL_ESYS),
 * never lets it through.
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
/*
 * The handshakes of a root's listener and of its proxies' (root.c, proxy.c):
 * one pool each (hspool.h) with the same settings. A deadline of 5 s and 64
 * in flight, as both had; the oldest cut off after 1 s when all are taken
 * and more wait, as the rank listeners do, so silent strangers cannot keep
 * ranks from their root for the whole deadline.
 */
#define AUTH_ROOT_HANDSHAKE_MS 5000
#define AUTH_ROOT_HANDSHAKES 64
#define AUTH_ROOT_CUT_GRACE_MS 1000

struct hspool;

/*
 * Accept fd for a root or a proxy, in a handshake of pool hp: authenticate,
 * settle fd in the pool, and take only a rank (WIRE_ROLE_ROOT) or a proxy
 * (WIRE_ROLE_PROXY). COLL_OK with *role; else err says why (empty when the
 * pool cut it off: a silent stranger, no word). fd stays the caller's.
 */
int auth_accept_pooled(struct hspool *hp, int fd, const struct coll_uid *uid, uint8_t *role,
    uint64_t deadline_ms, int abort_fd, char *err, size_t errlen);
/* Which end a MAC speaks for: the byte bound into it. */
enum auth_side { AUTH_SIDE_ACCEPTOR = 'A', AUTH_SIDE_CONNECTOR = 'C' };

/* The MAC of one side over the transcript; exposed for tests (scripted peers). */
int auth_mac(const struct coll_uid *uid, enum auth_side side, uint8_t role,
    const uint8_t *nonce_c, const uint8_t *nonce_a, uint8_t out[32]);

/*
 * The id of a communicator derived from parent (a shrink or split: n the
 * parent's regroup count, color the split's), keyed by the job's secret so
 * that no one without it can predict the new one's page names.
 */
int auth_commid(const struct coll_uid *uid, uint64_t parent, uint64_t n, int32_t color,
    uint64_t *out);

/*
 * Free libcrypto's state of the calling thread. A detached handshake thread
 * calls it before it says it is done: otherwise that state is freed only as
 * the thread exits, which can come after the communicator (or the process)
 * it served has gone, and leak checkers rightly report it.
 */
void auth_thread_end(void);

#endif
