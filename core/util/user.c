/*
 * The name of a user, for messages about whose a file, socket or process is
 * ("owned by user bob"): what the password database says is another's text,
 * so it is made printable before it goes into a message.
 */
#include <pwd.h>
#include <stdio.h>

#include "msg.h"
#include "user.h"

void
user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *r = NULL;
	char tmp[1024];

	/* The reentrant call: colltop, collstack and the triage readers ask from several threads. */
	if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &r) == 0 && r != NULL)
		snprintf(buf, len, "%s", r->pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)uid);
	msg_clean(buf);
}
