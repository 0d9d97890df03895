/*
 * Opening the files a target names: its maps give paths, and any user can
 * put anything at a path of theirs (a FIFO under the name of a deleted
 * library blocks open(2) for ever; a sparse ELF with a thousand symbol
 * tables keeps a symbol scan busy for minutes). So every file collstack
 * opens on a target's behalf is opened here: without blocking, refusing a
 * symbolic link as the last component, and only if it is a regular file of
 * bounded size whose section table is small, keeps its sections inside the
 * file and has no more symbol tables than a linker writes. A refusal says
 * which file and why; the target then loses its names, nobody else does.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "msg.h"
#include "regfile.h"
#include "stack_elf.h"

static void
stack_elf_why(char *why, size_t len, pid_t pid, const char *path, const char *what)
{
	char q[MSG_QUOTE_LEN(160)];

	msg_set(why, len, "pid %d: %s %s: not read", (int)pid,
	    msg_quote(q, path, strlen(path), 160), what);
}

/* One open of name: non-blocking (a FIFO returns at once), no symbolic link last. */
static int
stack_elf_open1(const char *name, pid_t pid, const char *path, char *why, size_t len)
{
	struct stat st;
	char what[96];
	int fd, r = regfile_open(name, O_NOFOLLOW | O_NOCTTY, &fd, &st);

	if (r == COLL_EUNSAFE) {
		snprintf(what, sizeof what, "is %s, not a regular file", regfile_kind(st.st_mode));
		stack_elf_why(why, len, pid, path, what);
		errno = EINVAL;
		return -1;
	}
	if (r != COLL_OK)
		return -1;
	if ((uint64_t)st.st_size > STACK_ELF_SIZE_MAX) {
		snprintf(what, sizeof what, "is %lld bytes, over the %llu read",
		    (long long)st.st_size, (unsigned long long)STACK_ELF_SIZE_MAX);
		stack_elf_why(why, len, pid, path, what);
		close(fd);
		errno = EFBIG;
		return -1;
	}
	return fd;
}

int
stack__elf_open(pid_t pid, const char *path, char *why, size_t len)
{
	char rp[4096 + 32];
	int fd;

	if (path[0] != '/')
		return -1;
	/* The file as the target sees it (its mount namespace), then as we do. */
	snprintf(rp, sizeof rp, "/proc/%d/root%s", (int)pid, path);
	fd = stack_elf_open1(rp, pid, path, why, len);
	if (fd == -1 && errno != EINVAL && errno != EFBIG)
		fd = stack_elf_open1(path, pid, path, why, len);
	return fd;
}

/* One section header: inside the file, and no symbol table past the bounds; 0 or -1. */
static int
stack_elf_section(const GElf_Shdr *sh, uint64_t fsize, int *nsym, char *what, size_t len)
{
	if (sh->sh_type != SHT_NOBITS && (sh->sh_offset > fsize ||
	    sh->sh_size > fsize - sh->sh_offset)) {
		snprintf(what, len, "has a section past its end");
		return -1;
	}
	if (sh->sh_type != SHT_SYMTAB && sh->sh_type != SHT_DYNSYM)
		return 0;
	if (++*nsym > STACK_ELF_SYMTABS_MAX) {
		snprintf(what, len, "has more symbol tables than a linker writes");
		return -1;
	}
	if (sh->sh_size > STACK_ELF_SYMTAB_MAX) {
		snprintf(what, len, "has a symbol table of %llu bytes, over the %u read",
		    (unsigned long long)sh->sh_size, STACK_ELF_SYMTAB_MAX);
		return -1;
	}
	return 0;
}

int
stack__elf_check(Elf *elf, uint64_t fsize, char *what, size_t len)
{
	Elf_Scn *scn = NULL;
	size_t nsec;
	int nsym = 0;

	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrnum(elf, &nsec) != 0) {
		snprintf(what, len, "is not an ELF file");
		return -1;
	}
	if (nsec > STACK_ELF_SECTIONS_MAX) {
		snprintf(what, len, "has %zu sections, over the %d read", nsec,
		    STACK_ELF_SECTIONS_MAX);
		return -1;
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) == NULL) {
			snprintf(what, len, "has a section header that cannot be read");
			return -1;
		}
		if (stack_elf_section(&sh, fsize, &nsym, what, len) != 0)
			return -1;
	}
	return 0;
}

/*
 * A file that only root or we can change is mapped, as libelf likes (a
 * user's own libtorch in their venv is a gigabyte; truncating it under us
 * would only cut short their own reading); any other is read with pread,
 * since its owner could truncate it under the mapping and kill us with
 * SIGBUS.
 */
Elf_Cmd
stack__elf_cmd(const struct stat *st, uid_t me)
{
	return (st->st_uid == 0 || st->st_uid == me) && (st->st_mode & 022) == 0 ?
	    ELF_C_READ_MMAP : ELF_C_READ;
}

Elf *
stack__elf_begin(int fd, pid_t pid, const char *path, char *why, size_t len)
{
	struct stat st;
	char what[96];
	Elf *elf;

	(void)elf_version(EV_CURRENT);
	if (fstat(fd, &st) == -1 || (elf = elf_begin(fd, stack__elf_cmd(&st, geteuid()), NULL)) == NULL) {
		stack_elf_why(why, len, pid, path, "is not an ELF file");
		return NULL;
	}
	if (stack__elf_check(elf, (uint64_t)st.st_size, what, sizeof what) != 0) {
		stack_elf_why(why, len, pid, path, what);
		elf_end(elf);
		return NULL;
	}
	return elf;
}
