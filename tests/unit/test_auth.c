/*
 * The challenge-response of core/bootstrap/auth.c over socketpairs: the real
 * auth_connect or auth_accept runs in a thread, its peer is either the other
 * real function or this test speaking the wire format itself (a scripted
 * peer, wire.h's AUTH_* frames), so that it can do what an attacker without
 * the secret would: replay frames of an earlier session, or reflect a MAC.
 *
 * What each test guards (it fails when that is removed):
 * - right/wrong secret: the MACs are keyed by the secret, checked on both sides;
 * - replay: each side's nonce is fresh per session;
 * - reflection: the side byte bound into the MAC (without it the acceptor's
 *   challenge MAC equals the proof it expects, as both cover one transcript).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "err.h"
#include "uid.h"
#include "wire.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define JOBID 0x0123456789abcdefull

/* One real end of a handshake, run in a thread; it closes its fd when done. */
struct side {
	int fd;
	int accept;		/* 1: auth_accept, 0: auth_connect */
	struct coll_uid uid;
	uint8_t role;		/* connector: asked for; acceptor: what it got */
	int r;
	char err[256];
	pthread_t t;
};

static struct coll_uid
make_uid(uint8_t fill)
{
	struct coll_uid u;

	memset(&u, 0, sizeof u);
	u.version = UID_VERSION;
	u.jobid = JOBID;
	memset(u.secret, fill, sizeof u.secret);
	return u;
}

static uint64_t
deadline(void)
{
	return clock_now_ms() + 10000;
}

static void *
side_main(void *arg)
{
	struct side *s = arg;

	if (s->accept)
		s->r = auth_accept(s->fd, &s->uid, &s->role, deadline(), -1, s->err,
		    sizeof s->err);
	else
		s->r = auth_connect(s->fd, &s->uid, s->role, deadline(), -1, s->err,
		    sizeof s->err);
	close(s->fd);
	return NULL;
}

/* Start a real end on one fd of a fresh socketpair; returns the other fd. */
static int
side_start(struct side *s, int accept, struct coll_uid uid, uint8_t role)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	memset(s, 0, sizeof *s);
	s->fd = sv[0];
	s->accept = accept;
	s->uid = uid;
	s->role = role;
	s->r = 1;
	assert_int_equal(pthread_create(&s->t, NULL, side_main, s), 0);
	return sv[1];
}

static int
side_join(struct side *s)
{
	assert_int_equal(pthread_join(s->t, NULL), 0);
	return s->r;
}

/* The scripted peer: send one auth frame as wire.h encodes it. */
static void
script_send(int fd, uint8_t type, const struct wire_auth *a)
{
	uint8_t buf[64];
	struct wire_buf b;

	wire_buf_init(&b, buf, sizeof buf);
	wire_auth_encode(&b, type, a);
	assert_false(b.err);
	assert_int_equal(wire_send(fd, type, buf, (uint32_t)b.off, deadline(), -1), COLL_OK);
}

/* Receive one frame; returns its type (an auth frame decoded into a), or -1 on EOF. */
static int
script_recv(int fd, struct wire_auth *a)
{
	struct wire_hdr h;
	uint8_t *p = NULL;
	int r = wire_recv(fd, &h, &p, 512, deadline(), -1);

	if (r != COLL_OK) {
		free(p);
		return -1;
	}
	if (h.type != WIRE_AUTH_FAIL)
		assert_int_equal(wire_auth_decode(p, h.len, h.type, a), COLL_OK);
	free(p);
	return h.type;
}

/* Both ends real: the same secret passes, different secrets fail on both sides. */
static void
test_auth_secret(void **state)
{
	static const struct {
		uint8_t csecret, asecret;
		int want_c, want_a;	/* COLL_OK, or 1 for "anything but COLL_OK" */
	} rows[] = {
		{ 0x11, 0x11, COLL_OK, COLL_OK },
		{ 0x11, 0x12, COLL_EAUTH, 1 },
		{ 0x00, 0xff, COLL_EAUTH, 1 },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		struct side c, a;
		int fd = side_start(&a, 1, make_uid(rows[i].asecret), 0);

		/* The connector's thread gets the other end of the acceptor's pair. */
		memset(&c, 0, sizeof c);
		c.fd = fd;
		c.uid = make_uid(rows[i].csecret);
		c.role = WIRE_ROLE_PEER;
		assert_int_equal(pthread_create(&c.t, NULL, side_main, &c), 0);
		assert_int_equal(side_join(&c), rows[i].want_c);
		if (rows[i].want_a == COLL_OK) {
			assert_int_equal(side_join(&a), COLL_OK);
			assert_int_equal(a.role, WIRE_ROLE_PEER);
		} else {
			assert_int_not_equal(side_join(&a), COLL_OK);
		}
	}
}

/*
 * A connector with the wrong secret that does not stop at the acceptor's MAC
 * (an attacker just tries a proof): the acceptor refuses with AUTH_FAIL.
 */
static void
test_auth_wrong_proof(void **state)
{
	struct coll_uid wrong = make_uid(0x22);
	struct wire_auth hello = { .jobid = JOBID, .role = WIRE_ROLE_ROOT }, ch, proof = { 0 };
	struct side a;
	int fd = side_start(&a, 1, make_uid(0x21), 0);

	memset(hello.nonce, 0x5a, sizeof hello.nonce);
	script_send(fd, WIRE_AUTH_HELLO, &hello);
	assert_int_equal(script_recv(fd, &ch), WIRE_AUTH_CHALLENGE);
	assert_int_equal(auth_mac(&wrong, AUTH_SIDE_CONNECTOR, hello.role, hello.nonce, ch.nonce,
	    proof.mac), COLL_OK);
	script_send(fd, WIRE_AUTH_PROOF, &proof);
	assert_int_equal(script_recv(fd, &ch), WIRE_AUTH_FAIL);
	assert_int_equal(side_join(&a), COLL_EAUTH);
	close(fd);
}

/* An acceptor with the wrong secret answers the real connector: it refuses. */
static void
test_auth_wrong_challenge(void **state)
{
	struct coll_uid wrong = make_uid(0x32);
	struct wire_auth hello, ch = { 0 };
	struct side c;
	int fd = side_start(&c, 0, make_uid(0x31), WIRE_ROLE_PEER);

	assert_int_equal(script_recv(fd, &hello), WIRE_AUTH_HELLO);
	memset(ch.nonce, 0x77, sizeof ch.nonce);
	assert_int_equal(auth_mac(&wrong, AUTH_SIDE_ACCEPTOR, hello.role, hello.nonce, ch.nonce,
	    ch.mac), COLL_OK);
	script_send(fd, WIRE_AUTH_CHALLENGE, &ch);
	assert_int_equal(side_join(&c), COLL_EAUTH);
	/* It sent no proof: the next thing on the wire is its close. */
	assert_int_equal(script_recv(fd, &ch), -1);
	close(fd);
}

/*
 * Record an honest session with a real acceptor (the connector's HELLO and
 * PROOF, made here with the secret), as an eavesdropper would see it.
 */
static void
record_session(const struct coll_uid *uid, struct wire_auth *hello, struct wire_auth *proof)
{
	struct wire_auth ch;
	struct side a;
	int fd = side_start(&a, 1, *uid, 0);

	memset(hello, 0, sizeof *hello);
	memset(proof, 0, sizeof *proof);
	hello->jobid = uid->jobid;
	hello->role = WIRE_ROLE_ROOT;
	memset(hello->nonce, 0x42, sizeof hello->nonce);
	script_send(fd, WIRE_AUTH_HELLO, hello);
	assert_int_equal(script_recv(fd, &ch), WIRE_AUTH_CHALLENGE);
	assert_int_equal(auth_mac(uid, AUTH_SIDE_CONNECTOR, hello->role, hello->nonce, ch.nonce,
	    proof->mac), COLL_OK);
	script_send(fd, WIRE_AUTH_PROOF, proof);
	assert_int_equal(side_join(&a), COLL_OK);
	assert_int_equal(a.role, WIRE_ROLE_ROOT);
	close(fd);
}

/* That session's HELLO and PROOF, replayed to the acceptor, fail: its nonce is fresh. */
static void
test_auth_replay_proof(void **state)
{
	struct coll_uid uid = make_uid(0x41);
	struct wire_auth hello, proof, ch;
	struct side a;
	int fd;

	record_session(&uid, &hello, &proof);
	fd = side_start(&a, 1, uid, 0);
	script_send(fd, WIRE_AUTH_HELLO, &hello);
	assert_int_equal(script_recv(fd, &ch), WIRE_AUTH_CHALLENGE);
	script_send(fd, WIRE_AUTH_PROOF, &proof);
	assert_int_equal(script_recv(fd, &ch), WIRE_AUTH_FAIL);
	assert_int_equal(side_join(&a), COLL_EAUTH);
	close(fd);
}

/* A recorded acceptor CHALLENGE, replayed to a fresh connector, fails. */
static void
test_auth_replay_challenge(void **state)
{
	struct coll_uid uid = make_uid(0x51);
	struct wire_auth hello, old = { 0 }, ch;
	struct side c;
	int fd;

	/* Session 1: a real acceptor's challenge to the real connector's hello. */
	fd = side_start(&c, 0, uid, WIRE_ROLE_PEER);
	assert_int_equal(script_recv(fd, &hello), WIRE_AUTH_HELLO);
	memset(old.nonce, 0x24, sizeof old.nonce);
	assert_int_equal(auth_mac(&uid, AUTH_SIDE_ACCEPTOR, hello.role, hello.nonce, old.nonce,
	    old.mac), COLL_OK);
	script_send(fd, WIRE_AUTH_CHALLENGE, &old);
	assert_int_equal(script_recv(fd, &ch), WIRE_AUTH_PROOF);
	assert_int_equal(side_join(&c), COLL_OK);
	close(fd);
	/* Session 2: the same challenge, replayed. */
	fd = side_start(&c, 0, uid, WIRE_ROLE_PEER);
	assert_int_equal(script_recv(fd, &hello), WIRE_AUTH_HELLO);
	script_send(fd, WIRE_AUTH_CHALLENGE, &old);
	assert_int_equal(side_join(&c), COLL_EAUTH);
	close(fd);
}

/* The acceptor's own challenge MAC sent back to it as the proof: refused. */
static void
test_auth_reflect_challenge(void **state)
{
	struct wire_auth hello = { .jobid = JOBID, .role = WIRE_ROLE_PEER }, ch, proof = { 0 };
	struct side a;
	int fd = side_start(&a, 1, make_uid(0x61), 0);

	memset(hello.nonce, 0x3c, sizeof hello.nonce);
	script_send(fd, WIRE_AUTH_HELLO, &hello);
	assert_int_equal(script_recv(fd, &ch), WIRE_AUTH_CHALLENGE);
	memcpy(proof.mac, ch.mac, sizeof proof.mac);
	script_send(fd, WIRE_AUTH_PROOF, &proof);
	assert_int_equal(script_recv(fd, &ch), WIRE_AUTH_FAIL);
	assert_int_equal(side_join(&a), COLL_EAUTH);
	close(fd);
}

/*
 * A connector's MAC over this very transcript passed off as the acceptor's
 * (computed here with the secret, standing for a proof captured from a
 * connector): the real connector refuses it.
 */
static void
test_auth_reflect_proof(void **state)
{
	struct coll_uid uid = make_uid(0x71);
	struct wire_auth hello, ch = { 0 };
	struct side c;
	int fd = side_start(&c, 0, uid, WIRE_ROLE_ROOT);

	assert_int_equal(script_recv(fd, &hello), WIRE_AUTH_HELLO);
	memset(ch.nonce, 0x99, sizeof ch.nonce);
	assert_int_equal(auth_mac(&uid, AUTH_SIDE_CONNECTOR, hello.role, hello.nonce, ch.nonce,
	    ch.mac), COLL_OK);
	script_send(fd, WIRE_AUTH_CHALLENGE, &ch);
	assert_int_equal(side_join(&c), COLL_EAUTH);
	close(fd);
}

/* The role the connector asked for is bound too: a changed HELLO role fails the proof. */
static void
test_auth_role_bound(void **state)
{
	struct coll_uid uid = make_uid(0x81);
	struct wire_auth hello = { .jobid = JOBID, .role = WIRE_ROLE_PEER }, ch, proof = { 0 };
	struct side a;
	int fd = side_start(&a, 1, uid, 0);

	memset(hello.nonce, 0x18, sizeof hello.nonce);
	script_send(fd, WIRE_AUTH_HELLO, &hello);
	assert_int_equal(script_recv(fd, &ch), WIRE_AUTH_CHALLENGE);
	/* A proof honestly made for a ROOT hello, where the acceptor saw PEER. */
	assert_int_equal(auth_mac(&uid, AUTH_SIDE_CONNECTOR, WIRE_ROLE_ROOT, hello.nonce,
	    ch.nonce, proof.mac), COLL_OK);
	script_send(fd, WIRE_AUTH_PROOF, &proof);
	assert_int_equal(script_recv(fd, &ch), WIRE_AUTH_FAIL);
	assert_int_equal(side_join(&a), COLL_EAUTH);
	close(fd);
}

/* The MAC depends on every input: side, role, each nonce, job id and secret. */
static void
test_auth_mac_inputs(void **state)
{
	struct coll_uid u = make_uid(0x91), other = make_uid(0x92), job = u;
	uint8_t nc[WIRE_NONCE_LEN], na[WIRE_NONCE_LEN], nx[WIRE_NONCE_LEN];
	uint8_t base[WIRE_MAC_LEN], m[6][WIRE_MAC_LEN];

	memset(nc, 1, sizeof nc);
	memset(na, 2, sizeof na);
	memset(nx, 3, sizeof nx);
	job.jobid ^= 1;
	assert_int_equal(auth_mac(&u, AUTH_SIDE_ACCEPTOR, 1, nc, na, base), COLL_OK);
	assert_int_equal(auth_mac(&u, AUTH_SIDE_CONNECTOR, 1, nc, na, m[0]), COLL_OK);
	assert_int_equal(auth_mac(&u, AUTH_SIDE_ACCEPTOR, 2, nc, na, m[1]), COLL_OK);
	assert_int_equal(auth_mac(&u, AUTH_SIDE_ACCEPTOR, 1, nx, na, m[2]), COLL_OK);
	assert_int_equal(auth_mac(&u, AUTH_SIDE_ACCEPTOR, 1, nc, nx, m[3]), COLL_OK);
	assert_int_equal(auth_mac(&job, AUTH_SIDE_ACCEPTOR, 1, nc, na, m[4]), COLL_OK);
	assert_int_equal(auth_mac(&other, AUTH_SIDE_ACCEPTOR, 1, nc, na, m[5]), COLL_OK);
	for (size_t i = 0; i < ARRAY_LEN(m); i++)
		assert_memory_not_equal(base, m[i], WIRE_MAC_LEN);
}

/*
 * A HELLO for another job is refused with a fixed text that names nothing
 * of the acceptor's job (it answered "... reached job <id>", handing the
 * id to anyone who asked); the acceptor's own error may name both.
 */
static void
test_auth_wrong_job_is_blind(void **state)
{
	struct wire_auth hello = { .jobid = JOBID ^ 0xff, .role = WIRE_ROLE_PEER };
	struct wire_note note;
	struct wire_hdr h;
	uint8_t *p = NULL;
	struct side a;
	int fd = side_start(&a, 1, make_uid(0xa1), 0);

	(void)state;
	script_send(fd, WIRE_AUTH_HELLO, &hello);
	assert_int_equal(wire_recv(fd, &h, &p, 512, deadline(), -1), COLL_OK);
	assert_int_equal(h.type, WIRE_AUTH_FAIL);
	assert_int_equal(wire_note_decode(p, h.len, &note), COLL_OK);
	free(p);
	assert_null(strstr(note.msg, "0123456789abcdef"));
	assert_null(strstr(note.msg, "0123456789abcd10"));	/* nor ours echoed back */
	assert_int_equal(note.rank, -1);
	assert_int_equal(side_join(&a), COLL_EAUTH);
	assert_non_null(strstr(a.err, "0123456789abcdef"));
	close(fd);
}

/* Both ends real, different jobs: the connector names its own job, never the other's. */
static void
test_auth_wrong_job_connector_says_why(void **state)
{
	struct coll_uid other = make_uid(0xb1);
	struct side c, a;
	int fd = side_start(&a, 1, make_uid(0xb1), 0);

	(void)state;
	other.jobid = 0xfedcba9876543210ull;
	memset(&c, 0, sizeof c);
	c.fd = fd;
	c.uid = other;
	c.role = WIRE_ROLE_PEER;
	assert_int_equal(pthread_create(&c.t, NULL, side_main, &c), 0);
	assert_int_equal(side_join(&c), COLL_EAUTH);
	assert_int_not_equal(side_join(&a), COLL_OK);
	assert_non_null(strstr(c.err, "is not part of job fedcba9876543210"));
	assert_null(strstr(c.err, "0123456789abcdef"));
}

/*
 * A derived communicator's id is keyed by the secret: two jobs with the same
 * public id and root but other secrets derive other ids (a stranger cannot
 * compute it), one job always the same (every rank would agree), and each
 * input counts.
 */
static void
test_auth_commid_keyed(void **state)
{
	struct coll_uid u = make_uid(0xc1), v = make_uid(0xc2);
	uint64_t a, b, m[4];

	(void)state;
	assert_int_equal(auth_commid(&u, JOBID, 1, 0, &a), COLL_OK);
	assert_int_equal(auth_commid(&u, JOBID, 1, 0, &b), COLL_OK);
	assert_true(a == b);
	assert_int_equal(auth_commid(&v, JOBID, 1, 0, &m[0]), COLL_OK);
	assert_int_equal(auth_commid(&u, JOBID ^ 1, 1, 0, &m[1]), COLL_OK);
	assert_int_equal(auth_commid(&u, JOBID, 2, 0, &m[2]), COLL_OK);
	assert_int_equal(auth_commid(&u, JOBID, 1, 1, &m[3]), COLL_OK);
	for (size_t i = 0; i < ARRAY_LEN(m); i++)
		assert_true(m[i] != a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auth_secret),
		cmocka_unit_test(test_auth_wrong_proof),
		cmocka_unit_test(test_auth_wrong_challenge),
		cmocka_unit_test(test_auth_replay_proof),
		cmocka_unit_test(test_auth_replay_challenge),
		cmocka_unit_test(test_auth_reflect_challenge),
		cmocka_unit_test(test_auth_reflect_proof),
		cmocka_unit_test(test_auth_role_bound),
		cmocka_unit_test(test_auth_mac_inputs),
		cmocka_unit_test(test_auth_wrong_job_is_blind),
		cmocka_unit_test(test_auth_wrong_job_connector_says_why),
		cmocka_unit_test(test_auth_commid_keyed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
