/*
 * libssh2_probe: connect to one netbed host the way a libssh2 launcher would
 * (known_hosts check, ed25519 public-key auth as root, exec a command) and
 * print what was negotiated. Used by selftest.sh when libssh2's headers are
 * there; build with: cc -o libssh2_probe libssh2_probe.c -lssh2
 *
 *   libssh2_probe ADDR[:PORT] NAME KNOWN_HOSTS PRIVATE_KEY [COMMAND]
 *
 * The host key is looked up in KNOWN_HOSTS under both ADDR and NAME. Prints
 * "kex=... hostkey=... cipher=... mac=..." and then the command's output;
 * exits with the command's exit status, or 3 when anything else failed.
 */
#include <arpa/inet.h>
#include <libssh2.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int fail(LIBSSH2_SESSION *s, const char *what)
{
	char *msg = NULL;

	if (s)
		libssh2_session_last_error(s, &msg, NULL, 0);
	fprintf(stderr, "libssh2_probe: %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
	return 3;
}

static int port = 22;

static int connect_to(char *addr)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char *colon = strchr(addr, ':');
	int fd;

	if (colon) {
		*colon = '\0';
		port = atoi(colon + 1);
	}
	sin.sin_port = htons((unsigned short)port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* 0 when the server's host key is in known_hosts under both names. */
static int check_host_key(LIBSSH2_SESSION *s, const char *addr, const char *name, const char *kh_file)
{
	LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(s);
	size_t len;
	int type, mask, rc = 0;
	const char *key = libssh2_session_hostkey(s, &len, &type);
	const char *who[2] = { addr, name };

	if (!kh || !key || type != LIBSSH2_HOSTKEY_TYPE_ED25519)
		return -1;
	if (libssh2_knownhost_readfile(kh, kh_file, LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0)
		rc = -1;
	mask = LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | LIBSSH2_KNOWNHOST_KEY_ED25519;
	for (int i = 0; i < 2 && rc == 0; i++)
		if (libssh2_knownhost_checkp(kh, who[i], port, key, len, mask, NULL) != LIBSSH2_KNOWNHOST_CHECK_MATCH) {
			fprintf(stderr, "libssh2_probe: host key of %s not matched in %s\n", who[i], kh_file);
			rc = -1;
		}
	libssh2_knownhost_free(kh);
	return rc;
}

static int run_command(LIBSSH2_SESSION *s, const char *cmd)
{
	LIBSSH2_CHANNEL *ch = libssh2_channel_open_session(s);
	char buf[4096];
	ssize_t n;
	int status;

	if (!ch)
		return fail(s, "open session");
	if (libssh2_channel_exec(ch, cmd) != 0)
		return fail(s, "exec");
	while ((n = libssh2_channel_read(ch, buf, sizeof buf)) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	libssh2_channel_close(ch);
	libssh2_channel_wait_closed(ch);
	status = libssh2_channel_get_exit_status(ch);
	libssh2_channel_free(ch);
	return status;
}

int main(int argc, char **argv)
{
	LIBSSH2_SESSION *s;
	int fd, rc;

	if (argc < 5 || argc > 6) {
		fprintf(stderr, "usage: libssh2_probe ADDR[:PORT] NAME KNOWN_HOSTS PRIVATE_KEY [COMMAND]\n");
		return 2;
	}
	if (libssh2_init(0) != 0 || !(s = libssh2_session_init()))
		return fail(NULL, "init");
	fd = connect_to(argv[1]);
	if (fd < 0)
		return fail(NULL, "connect");
	if (libssh2_session_handshake(s, fd) != 0)
		return fail(s, "handshake");
	printf("kex=%s hostkey=%s cipher=%s mac=%s\n", libssh2_session_methods(s, LIBSSH2_METHOD_KEX),
	       libssh2_session_methods(s, LIBSSH2_METHOD_HOSTKEY), libssh2_session_methods(s, LIBSSH2_METHOD_CRYPT_CS),
	       libssh2_session_methods(s, LIBSSH2_METHOD_MAC_CS));
	if (check_host_key(s, argv[1], argv[2], argv[3]) != 0)
		return fail(s, "known_hosts");
	if (libssh2_userauth_publickey_fromfile_ex(s, "root", 4, NULL, argv[4], NULL) != 0)
		return fail(s, "public key auth");
	rc = run_command(s, argc > 5 ? argv[5] : "hostname");
	libssh2_session_disconnect(s, "bye");
	libssh2_session_free(s);
	close(fd);
	libssh2_exit();
	return rc;
}
