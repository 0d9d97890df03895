#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "auth.h"
#include "err.h"
#include "hspool.h"
#include "msg.h"
#include "net.h"
#include "wire.h"

#define AUTH_LABEL "coll-auth"
#define AUTH_COMMID_LABEL "coll-commid"

#define AUTH_EXIT_WAIT_MS 1000

/* The one answer to a HELLO for another job: fixed, so it tells a stranger nothing. */
#define AUTH_REFUSE_JOB "not this job"

static pthread_once_t auth_once = PTHREAD_ONCE_INIT;
static atomic_int auth_busy, auth_closing;

/*
 * A program that exits (exit(3) after a failed op) while our threads still
 * handshake has libcrypto tear itself down at exit under them: they crash
 * in HMAC before the process is gone. So libcrypto is asked not to (which
 * holds when we are its first user), and, for when someone else was first,
 * our own exit handler, registered after libcrypto's and so run before it,
 * stops new MACs and waits (a bounded while) for those under way.
 */
static void
auth_at_exit(void)
{
	struct timespec ts = { 0, 1000000 };

	atomic_store(&auth_closing, 1);
	for (int i = 0; i < AUTH_EXIT_WAIT_MS && atomic_load(&auth_busy) > 0; i++)
		nanosleep(&ts, NULL);
}

static void
auth_init(void)
{
	(void)OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
	atexit(auth_at_exit);
}

int
auth_mac(const struct coll_uid *uid, enum auth_side side, uint8_t role, const uint8_t *nonce_c,
    const uint8_t *nonce_a, uint8_t out[WIRE_MAC_LEN])
{
	uint8_t msg[sizeof AUTH_LABEL - 1 + 1 + 8 + 1 + 2 * WIRE_NONCE_LEN];
	unsigned int len = 0;
	struct wire_buf b;

	pthread_once(&auth_once, auth_init);
	wire_buf_init(&b, msg, sizeof msg);
	wire_put_bytes(&b, AUTH_LABEL, sizeof AUTH_LABEL - 1);
	wire_put_u8(&b, (uint8_t)side);
	wire_put_u64(&b, uid->jobid);
	wire_put_u8(&b, role);
	wire_put_bytes(&b, nonce_c, WIRE_NONCE_LEN);
	wire_put_bytes(&b, nonce_a, WIRE_NONCE_LEN);
	if (b.err || b.off != sizeof msg)
		return COLL_EINVAL;
	/* Busy first, then look: the exit handler either sees us or we see it. */
	atomic_fetch_add(&auth_busy, 1);
	if (atomic_load(&auth_closing)) {
		atomic_fetch_sub(&auth_busy, 1);
		return COLL_ESYS;
	}
	/* A MAC that was not computed must never be compared: fail the handshake. */
	if (HMAC(EVP_sha256(), uid->secret, UID_SECRET_LEN, msg, sizeof msg, out, &len) == NULL ||
	    len != WIRE_MAC_LEN) {
		OPENSSL_cleanse(out, WIRE_MAC_LEN);
		atomic_fetch_sub(&auth_busy, 1);
		return COLL_ESYS;
	}
	atomic_fetch_sub(&auth_busy, 1);
	return COLL_OK;
}

/*
 * HMAC-SHA256 under the job's secret of "coll-commid" jobid parent n color,
 * its first 8 bytes. Only holders of the secret can compute it, and
 * everyone who holds it computes the same (the root does, and tells the
 * ranks): a stranger who knows the job id from a page name cannot tell what
 * the next communicator will be called, and cannot squat its pages.
 */
int
auth_commid(const struct coll_uid *uid, uint64_t parent, uint64_t n, int32_t color,
    uint64_t *out)
{
	uint8_t msg[sizeof AUTH_COMMID_LABEL - 1 + 8 + 8 + 8 + 4], mac[WIRE_MAC_LEN];
	unsigned int len = 0;
	struct wire_buf b;
	int r = COLL_ESYS;

	pthread_once(&auth_once, auth_init);
	wire_buf_init(&b, msg, sizeof msg);
	wire_put_bytes(&b, AUTH_COMMID_LABEL, sizeof AUTH_COMMID_LABEL - 1);
	wire_put_u64(&b, uid->jobid);
	wire_put_u64(&b, parent);
	wire_put_u64(&b, n);
	wire_put_u32(&b, (uint32_t)color);
	if (b.err || b.off != sizeof msg)
		return COLL_EINVAL;
	atomic_fetch_add(&auth_busy, 1);
	if (!atomic_load(&auth_closing) &&
	    HMAC(EVP_sha256(), uid->secret, UID_SECRET_LEN, msg, sizeof msg, mac, &len) != NULL &&
	    len == WIRE_MAC_LEN) {
		wire_buf_init(&b, mac, sizeof mac);
		*out = wire_get_u64(&b);
		r = COLL_OK;
	}
	atomic_fetch_sub(&auth_busy, 1);
	return r;
}

/* Constant-time MAC comparison: 1 when equal. */
static int
auth_mac_equal(const uint8_t *a, const uint8_t *b)
{
	return CRYPTO_memcmp(a, b, WIRE_MAC_LEN) == 0;
}

static int
auth_send(int fd, uint8_t type, const struct wire_auth *a, uint64_t dl, int afd)
{
	uint8_t buf[64];
	struct wire_buf b;

	wire_buf_init(&b, buf, sizeof buf);
	wire_auth_encode(&b, type, a);
	return wire_send(fd, type, buf, (uint32_t)b.off, dl, afd);
}

/*
 * A refusal to our HELLO. Its text is the peer's, from before it proved
 * anything: quoted, and said after our own reading of it. A coll peer
 * refuses a HELLO only for another job, and says no more than that (it
 * never names its own), so what we know is which job we asked for.
 */
static void
auth_refused(int fd, const struct wire_auth *hello, const uint8_t *p, uint32_t len, char *err,
    size_t errlen)
{
	char where[NET_ADDRSTR_LEN] = "?", q[MSG_QUOTE_LEN(64)];
	struct net_addr peer = { .len = sizeof peer.ss };
	struct wire_note note;

	if (getpeername(fd, (struct sockaddr *)&peer.ss, &peer.len) == 0 &&
	    (peer.ss.ss_family == AF_INET || peer.ss.ss_family == AF_INET6))
		net_addr_format(&peer, where, sizeof where);
	if (wire_note_decode(p, len, &note) != COLL_OK)
		snprintf(note.msg, sizeof note.msg, "(no reason given)");
	msg_quote(q, note.msg, strnlen(note.msg, sizeof note.msg), 64);
	if (hello == NULL)	/* an acceptor is never refused: a stranger's frame */
		snprintf(err, errlen, "the peer at %s sent a refusal during authentication: %s",
		    where, q);
	else
		snprintf(err, errlen, "the peer at %s is not part of job %016llx (it said %s): "
		    "check the address and COLL_UNIQUE_ID", where,
		    (unsigned long long)hello->jobid, q);
}

/* Receive one auth frame of the expected type; an AUTH_FAIL becomes an error text. */
static int
auth_recv(int fd, uint8_t type, struct wire_auth *a, uint64_t dl, int afd,
    const struct wire_auth *hello, char *err, size_t errlen)
{
	struct wire_hdr h;
	uint8_t *p = NULL;
	int r;

	r = wire_recv(fd, &h, &p, 512, dl, afd);
	if (r == COLL_OK && h.type == WIRE_AUTH_FAIL) {
		auth_refused(fd, hello, p, h.len, err, errlen);
		r = COLL_EAUTH;
	} else if (r == COLL_OK && h.type != type) {
		snprintf(err, errlen, "peer sent message type %u during authentication", h.type);
		r = COLL_EPROTO;
	} else if (r == COLL_OK && wire_auth_decode(p, h.len, type, a) != COLL_OK) {
		snprintf(err, errlen, "peer sent a malformed authentication message");
		r = COLL_EPROTO;
	} else if (r == COLL_EVERSION) {
		snprintf(err, errlen, "peer speaks another coll wire version (this is %d): "
		    "install the same coll version on every host", WIRE_VERSION);
	} else if (r == COLL_EPROTO || r == COLL_ETOOBIG) {
		snprintf(err, errlen, "peer sent bytes that are not the coll protocol");
		r = COLL_EPROTO;
	} else if (r != COLL_OK) {
		snprintf(err, errlen, "authentication: %s", coll_strerror(r));
	}
	free(p);
	return r;
}

static void
auth_refuse(int fd, const char *why, uint64_t dl, int afd)
{
	struct wire_note note = { .code = COLL_EAUTH, .rank = -1 };
	uint8_t buf[WIRE_MSG_LEN + 16];
	struct wire_buf b;

	snprintf(note.msg, sizeof note.msg, "%s", why);
	wire_buf_init(&b, buf, sizeof buf);
	wire_note_encode(&b, &note);
	(void)wire_send(fd, WIRE_AUTH_FAIL, buf, (uint32_t)b.off, dl, afd);
}

/* The connector's half after HELLO: check the acceptor's MAC, then prove. */
static int
auth_connect_prove(int fd, const struct coll_uid *uid, const struct wire_auth *hello,
    uint64_t dl, int afd, char *err, size_t errlen)
{
	struct wire_auth ch, proof = { 0 };
	uint8_t want[WIRE_MAC_LEN];
	int r;

	if ((r = auth_recv(fd, WIRE_AUTH_CHALLENGE, &ch, dl, afd, hello, err, errlen)) != COLL_OK)
		return r;
	if (auth_mac(uid, AUTH_SIDE_ACCEPTOR, hello->role, hello->nonce, ch.nonce,
	    want) != COLL_OK ||
	    auth_mac(uid, AUTH_SIDE_CONNECTOR, hello->role, hello->nonce, ch.nonce,
	    proof.mac) != COLL_OK) {
		snprintf(err, errlen, "authentication: HMAC-SHA256 failed in libcrypto");
		return COLL_ESYS;
	}
	if (!auth_mac_equal(want, ch.mac)) {
		snprintf(err, errlen, "peer does not hold this job's secret: "
		    "check that every rank got the same COLL_UNIQUE_ID");
		return COLL_EAUTH;
	}
	if ((r = auth_send(fd, WIRE_AUTH_PROOF, &proof, dl, afd)) != COLL_OK)
		snprintf(err, errlen, "authentication: %s", coll_strerror(r));
	return r;
}

int
auth_connect(int fd, const struct coll_uid *uid, uint8_t role, uint64_t dl, int afd, char *err,
    size_t errlen)
{
	struct wire_auth hello = { .jobid = uid->jobid, .role = role };
	int r;

	if (uid_random(hello.nonce, WIRE_NONCE_LEN) != COLL_OK) {
		snprintf(err, errlen, "authentication: no random bytes from the kernel");
		return COLL_ESYS;
	}
	if ((r = auth_send(fd, WIRE_AUTH_HELLO, &hello, dl, afd)) != COLL_OK) {
		snprintf(err, errlen, "authentication: %s", coll_strerror(r));
		return r;
	}
	return auth_connect_prove(fd, uid, &hello, dl, afd, err, errlen);
}

/* The acceptor's half after HELLO: challenge with its MAC, then check the proof. */
static int
auth_accept_check(int fd, const struct coll_uid *uid, const struct wire_auth *hello,
    uint64_t dl, int afd, char *err, size_t errlen)
{
	struct wire_auth ch = { 0 }, proof;
	uint8_t want[WIRE_MAC_LEN];
	int r;

	if (uid_random(ch.nonce, WIRE_NONCE_LEN) != COLL_OK) {
		snprintf(err, errlen, "authentication: no random bytes from the kernel");
		return COLL_ESYS;
	}
	if (auth_mac(uid, AUTH_SIDE_ACCEPTOR, hello->role, hello->nonce, ch.nonce,
	    ch.mac) != COLL_OK ||
	    auth_mac(uid, AUTH_SIDE_CONNECTOR, hello->role, hello->nonce, ch.nonce,
	    want) != COLL_OK) {
		snprintf(err, errlen, "authentication: HMAC-SHA256 failed in libcrypto");
		return COLL_ESYS;
	}
	if ((r = auth_send(fd, WIRE_AUTH_CHALLENGE, &ch, dl, afd)) != COLL_OK) {
		snprintf(err, errlen, "authentication: %s", coll_strerror(r));
		return r;
	}
	if ((r = auth_recv(fd, WIRE_AUTH_PROOF, &proof, dl, afd, NULL, err, errlen)) != COLL_OK)
		return r;
	if (!auth_mac_equal(want, proof.mac)) {
		snprintf(err, errlen, "peer does not hold this job's secret");
		auth_refuse(fd, "wrong secret: check that every rank got the same COLL_UNIQUE_ID",
		    dl, afd);
		return COLL_EAUTH;
	}
	return COLL_OK;
}

int
auth_accept(int fd, const struct coll_uid *uid, uint8_t *role, uint64_t dl, int afd, char *err,
    size_t errlen)
{
	struct wire_auth hello;
	int r;

	if ((r = auth_recv(fd, WIRE_AUTH_HELLO, &hello, dl, afd, NULL, err, errlen)) != COLL_OK)
		return r;
	if (hello.jobid != uid->jobid) {
		/*
		 * The peer has proved nothing yet: it learns no job id, host or
		 * rank of ours, only that it is not ours (it knows which one it
		 * asked for and says so on its side). Our log may say both.
		 */
		snprintf(err, errlen, "a connection for job %016llx reached job %016llx: "
		    "a rank of another job, or a stranger", (unsigned long long)hello.jobid,
		    (unsigned long long)uid->jobid);
		auth_refuse(fd, AUTH_REFUSE_JOB, dl, afd);
		return COLL_EAUTH;
	}
	if ((r = auth_accept_check(fd, uid, &hello, dl, afd, err, errlen)) != COLL_OK)
		return r;
	*role = hello.role;
	return COLL_OK;
}

void
auth_thread_end(void)
{
	OPENSSL_thread_stop();
}

int
auth_accept_pooled(struct hspool *hp, int fd, const struct coll_uid *uid, uint8_t *role,
    uint64_t dl, int afd, char *err, size_t errlen)
{
	int r = auth_accept(fd, uid, role, dl, afd, err, errlen);

	/* Settled as soon as the peer proved the secret (or failed to), as peer.c does. */
	if (!hspool_settle(hp, fd)) {
		err[0] = '\0';
		return COLL_EABORTED;
	}
	if (r == COLL_OK && *role != WIRE_ROLE_ROOT && *role != WIRE_ROLE_PROXY) {
		snprintf(err, errlen, "it asked for role %u, not a rank's or a proxy's", *role);
		r = COLL_EPROTO;
	}
	return r;
}
