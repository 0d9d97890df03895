/*
 * Files opened on a target's behalf (elf.c): its libraries and executable
 * for symbols and call frame information, libpython for the interpreter's
 * symbols. Non-blocking, regular files only, bounded; see elf.c for why.
 */
#ifndef COLL_STACK_ELF_H
#define COLL_STACK_ELF_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define STACK_ELF_SIZE_MAX (4ull << 30)	/* bytes of a file: libtorch_cuda is about 1 GiB */
#define STACK_ELF_SECTIONS_MAX 4096	/* a shared library has 30 to 60 */
#define STACK_ELF_SYMTABS_MAX 4	/* a linker writes two: .symtab and .dynsym */
#define STACK_ELF_SYMTAB_MAX (512u << 20)	/* bytes of one symbol table */

/*
 * Open path as pid sees it (through /proc/PID/root, else as we do) for
 * reading: an fd, or -1; a file that is there but refused (not a regular
 * file, too large) sets why, naming pid and path.
 */
int stack__elf_open(pid_t pid, const char *path, char *why, size_t len);
/* elf_begin on fd, checked by stack__elf_check; NULL with why naming pid and path. */
Elf *stack__elf_begin(int fd, pid_t pid, const char *path, char *why, size_t len);
/* How stack__elf_begin, run as user me, reads a file like st: mapped if me's or root's, else pread. */
Elf_Cmd stack__elf_cmd(const struct stat *st, uid_t me);
/* Whether elf (of a file fsize bytes long) is within the bounds; -1 with what is wrong. */
int stack__elf_check(Elf *elf, uint64_t fsize, char *what, size_t len);

#endif
