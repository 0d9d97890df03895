/*
 * The screen: the only file that calls curses. It asks the view for text and
 * attributes under the model's lock and draws them after, so a frame folded
 * in meanwhile waits at most one draw.
 *
 * Keys as in htop where it has one: q or F10 quits (Ctrl-C too, exit 130:
 * it is a key here, so the workers stop on rank 0's word, not by signal),
 * h ? F1 help, F6 picks the sort column from a list (< > step through
 * them), I or r inverts the sort, \ or / filters, Left and Right scroll the
 * columns past the first (the host table is wider than 80 columns), space or
 * p pauses (the screen stops changing; the workers go on), t shows hosts or
 * ranks, + and - lengthen and shorten the workers' interval, c runs
 * collstack on a stalled job. Colours go with NO_COLOR or --no-color; the
 * sparklines fall back to ASCII when the locale is not UTF-8 or with
 * --ascii.
 */
#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "clock.h"
#include "top.h"
#include "xmalloc.h"

#define UI_MIN_COLS 60
#define UI_MIN_LINES 10
#define UI_MAX_ALERTS 6

enum { UI_PAIR_OK = 1, UI_PAIR_WARN, UI_PAIR_BAD, UI_PAIR_HEAD };

struct ui {
	const struct top_args *a;
	SCREEN *scr;
	int color, ascii;
	int by_host, sort[2], reverse;
	int help, editing, paused;
	int sorting, pick;	/* F6's list is up; the column picked in it */
	int hcol;		/* columns scrolled past, after the first */
	int more;		/* the last draw cut columns on the right */
	int intr;		/* quit by Ctrl-C */
	char filter[64];
	int top;		/* first row shown */
	uint64_t drawn_ms;
	char msg[256];
};

static const double ui_steps[] = { 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60 };
#define UI_NSTEPS (int)(sizeof ui_steps / sizeof ui_steps[0])

static void
ui_fatal(void)
{
	endwin();
	front_fatal_stderr();
}

/*
 * Ctrl-C as a key, as htop takes it: a signal would reach the workers on
 * this terminal too and end them with the job runner's words; a key stops
 * them on rank 0's word. Curses keeps this mode (def_prog_mode) and puts
 * the terminal's own back at endwin.
 */
static void
ui_ctrl_c_key(void)
{
	struct termios t;

	if (tcgetattr(STDIN_FILENO, &t) != 0)
		return;
	t.c_cc[VINTR] = _POSIX_VDISABLE;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
		def_prog_mode();
}

struct ui *
ui_open(const struct top_args *a, char *err, size_t len)
{
	struct ui *u;
	const char *cs;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		snprintf(err, len, "not a terminal: for scripts use --once, --iterations K or -b "
		    "(with --json for JSON)");
		return NULL;
	}
	setlocale(LC_ALL, "");
	cs = nl_langinfo(CODESET);
	u = xcalloc(1, sizeof *u);
	u->a = a;
	u->ascii = a->ascii || cs == NULL || strcmp(cs, "UTF-8") != 0;
	u->by_host = a->by_host;
	u->sort[0] = a->sort ? view_col_parse(0, a->sort) : 0;
	u->sort[1] = a->sort ? view_col_parse(1, a->sort) : 0;
	u->sort[0] = u->sort[0] < 0 ? 0 : u->sort[0];
	u->sort[1] = u->sort[1] < 0 ? 0 : u->sort[1];
	if (a->filter != NULL)
		snprintf(u->filter, sizeof u->filter, "%s", a->filter);
	if ((u->scr = newterm(NULL, stdout, stdin)) == NULL) {
		snprintf(err, len, "cannot start the screen: is TERM (%s) right?",
		    getenv("TERM") ? getenv("TERM") : "unset");
		free(u);
		return NULL;
	}
	xmalloc_set_fatal_hook(ui_fatal);
	cbreak();
	ui_ctrl_c_key();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	u->color = a->color && has_colors();
	if (u->color) {
		start_color();
		use_default_colors();
		init_pair(UI_PAIR_OK, COLOR_GREEN, -1);
		init_pair(UI_PAIR_WARN, COLOR_YELLOW, -1);
		init_pair(UI_PAIR_BAD, COLOR_RED, -1);
		init_pair(UI_PAIR_HEAD, COLOR_BLACK, COLOR_CYAN);
	}
	return u;
}

void
ui_close(struct ui *u)
{
	if (u == NULL)
		return;
	endwin();
	delscreen(u->scr);
	xmalloc_set_fatal_hook(NULL);
	free(u);
}

static attr_t
ui_attr(const struct ui *u, int va)
{
	switch (va) {
	case VA_HEAD: return u->color ? COLOR_PAIR(UI_PAIR_HEAD) : A_REVERSE;
	case VA_OK: return u->color ? COLOR_PAIR(UI_PAIR_OK) : A_NORMAL;
	case VA_WARN: return u->color ? COLOR_PAIR(UI_PAIR_WARN) | A_BOLD : A_BOLD;
	case VA_BAD: return u->color ? COLOR_PAIR(UI_PAIR_BAD) | A_BOLD : A_BOLD | A_REVERSE;
	case VA_DIM: return A_DIM;
	}
	return A_NORMAL;
}

/* Text at y, x, cut to the screen's width counting characters, not bytes. */
static void
ui_put(int y, int x, const char *s, attr_t at)
{
	int cols = COLS - x, n = 0;
	size_t b = 0;

	if (y < 0 || y >= LINES || cols <= 0)
		return;
	for (; s[b] != '\0'; b++)
		if (((unsigned char)s[b] & 0xC0) != 0x80 && n++ == cols)
			break;
	attrset(at);
	mvaddnstr(y, x, s, (int)b);
	attrset(A_NORMAL);
}

static void
ui_draw_help(struct ui *u)
{
	static const char *const lines[] = {
		"colltop keys",
		"",
		"  q F10      quit (Ctrl-C too, exit 130); the workers stop after their interval",
		"  h ? F1     this help (any key to leave it)",
		"  t  Tab     one row per rank, or per host",
		"  F6         sort by: pick the column from a list",
		"  <  >       sort by the column to the left or right",
		"  I  r       invert the sort",
		"  \\  /       filter: rows holding this text (Enter to keep, Esc to clear)",
		"  p  space   pause the screen (the workers go on)",
		"  +  -       longer or shorter interval for the workers",
		"  c          run collstack on the stalled job",
		"  Left Right scroll the columns after the first (the host table is wide)",
		"  Up Down PgUp PgDn  scroll the rows",
		"",
		"LATE_MS: how late a rank came to the probe; the others waited that long.",
		"A straggler comes later than k x the median for K intervals in a row.",
	};

	(void)u;
	erase();
	for (int i = 0; i < (int)(sizeof lines / sizeof lines[0]); i++)
		ui_put(i, 1, lines[i], i == 0 ? A_BOLD : A_NORMAL);
	refresh();
}

static int
ui_draw_alerts(struct ui *u, struct top_front *f, int y, char (*al)[256], int *at, int n)
{
	for (int i = 0; i < n && i < UI_MAX_ALERTS; i++)
		ui_put(y++, 0, al[i], ui_attr(u, at[i]));
	if (f->err[0] != '\0')
		ui_put(y++, 0, f->err, A_DIM);
	return y;
}

/* The columns drawn: the first, then from 1 + hcol on; the x of each, -1 not drawn. */
static void
ui_columns(struct ui *u, const struct view_table *t, int *xs)
{
	int x = 0;

	if (u->hcol > t->ncols - 2)
		u->hcol = t->ncols > 2 ? t->ncols - 2 : 0;
	u->more = 0;
	for (int c = 0; c < t->ncols; c++) {
		xs[c] = -1;
		if (c > 0 && c <= u->hcol)
			continue;
		if (x >= COLS) {
			u->more = 1;
			continue;
		}
		xs[c] = x;
		u->more |= x + t->width[c] > COLS;
		x += t->width[c] + 2;
	}
}

static void
ui_draw_table(struct ui *u, const struct view_table *t, int y, int bottom)
{
	int xs[VIEW_MAXCOLS], sort = u->sort[u->by_host];
	char head[128];

	ui_columns(u, t, xs);
	move(y, 0);
	attrset(ui_attr(u, VA_HEAD));
	hline(' ', COLS);
	for (int c = 0; c < t->ncols; c++) {
		if (xs[c] < 0)
			continue;
		snprintf(head, sizeof head, "%s%s", t->head[c].text, c == sort ? (u->reverse ?
		    "v" : "^") : "");
		ui_put(y, xs[c], head, ui_attr(u, VA_HEAD) | (c == sort ? A_BOLD : 0));
	}
	/* Columns off either side: say so where the eye looks for them. */
	if (u->hcol > 0 && COLS > 2)
		ui_put(y, xs[0] + t->width[0], "<", ui_attr(u, VA_HEAD) | A_BOLD);
	if (u->more && COLS > 2)
		ui_put(y, COLS - 1, ">", ui_attr(u, VA_HEAD) | A_BOLD);
	y++;
	if (u->top > t->nrows - (bottom - y))
		u->top = t->nrows - (bottom - y) > 0 ? t->nrows - (bottom - y) : 0;
	for (int r = u->top; r < t->nrows && y < bottom; r++, y++)
		for (int c = 0; c < t->ncols; c++) {
			const struct view_cell *cell = &t->rows[r][c];
			int pad = cell->right ? t->width[c] - (int)strlen(cell->text) : 0;

			if (xs[c] >= 0)
				ui_put(y, xs[c] + (pad > 0 ? pad : 0), cell->text,
				    ui_attr(u, cell->attr));
		}
}

/* F6's list: the columns of the table shown, the one picked in reverse video. */
static void
ui_draw_sort(struct ui *u)
{
	int n = view_ncols(u->by_host);

	erase();
	ui_put(0, 1, "Sort by (Up Down to pick, Enter to sort, Esc to leave)", A_BOLD);
	for (int c = 0; c < n && c + 2 < LINES; c++)
		ui_put(c + 2, 3, view_col_name(u->by_host, c), c == u->pick ? A_REVERSE : A_NORMAL);
	refresh();
}

static void
ui_draw_keys(struct ui *u)
{
	char buf[256];

	snprintf(buf, sizeof buf, "q quit  h help  t %s  F6 sort  / filter%s%s%s  arrows scroll  "
	    "c collstack%s", u->by_host ? "ranks" : "hosts",
	    u->filter[0] || u->editing ? " [" : "", u->filter,
	    u->filter[0] || u->editing ? (u->editing ? "_]" : "]") : "",
	    u->paused ? "  PAUSED" : "");
	move(LINES - 1, 0);
	clrtoeol();
	ui_put(LINES - 1, 0, u->msg[0] ? u->msg : buf, A_REVERSE);
}

void
ui_draw(struct ui *u, struct top_front *f)
{
	char sum[512], al[16][256], title[600];
	int at[16], n, y;
	struct view_table t;

	u->drawn_ms = clock_now_ms();
	if (u->help)
		return ui_draw_help(u);
	if (u->sorting)
		return ui_draw_sort(u);
	erase();
	if (COLS < UI_MIN_COLS || LINES < UI_MIN_LINES) {
		snprintf(title, sizeof title, "terminal too small (%dx%d): colltop needs %dx%d",
		    COLS, LINES, UI_MIN_COLS, UI_MIN_LINES);
		ui_put(LINES / 2, 0, title, A_BOLD);
		refresh();
		return;
	}
	front_lock_model(f);
	view_summary(&f->m, sum, sizeof sum);
	n = view_alerts(&f->m, (double)clock_now_ns() / 1e9, al, at, 16);
	view_table(&f->m, u->by_host, u->sort[u->by_host], u->reverse, u->filter, u->ascii, &t);
	snprintf(title, sizeof title, "colltop  %s", f->m.frames ? sum : "starting the workers...");
	ui_put(0, 0, title, A_BOLD);
	y = ui_draw_alerts(u, f, 1, al, at, n);
	front_unlock_model(f);
	ui_draw_table(u, &t, y + 1, LINES - 1);
	view_table_free(&t);
	ui_draw_keys(u);
	refresh();
}

/* A key while the filter is being typed. */
static void
ui_edit(struct ui *u, int ch)
{
	size_t n = strlen(u->filter);

	if (ch == '\n' || ch == KEY_ENTER) {
		u->editing = 0;
	} else if (ch == 27) {
		u->editing = 0;
		u->filter[0] = '\0';
	} else if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n > 0) {
		u->filter[n - 1] = '\0';
	} else if (ch >= 32 && ch < 127 && n + 1 < sizeof u->filter) {
		u->filter[n] = (char)ch;
		u->filter[n + 1] = '\0';
	}
}

/* A key while F6's list is up. */
static void
ui_sort_key(struct ui *u, int ch)
{
	int n = view_ncols(u->by_host);

	if (ch == KEY_UP)
		u->pick = u->pick > 0 ? u->pick - 1 : 0;
	else if (ch == KEY_DOWN)
		u->pick = u->pick < n - 1 ? u->pick + 1 : n - 1;
	else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER)
		u->sort[u->by_host] = u->pick;
	if (ch == '\n' || ch == '\r' || ch == KEY_ENTER || ch == 27 || ch == KEY_F(6) ||
	    ch == 'q')
		u->sorting = 0;
}

static void
ui_interval(struct top_front *f, int dir)
{
	int k = 0;

	while (k < UI_NSTEPS - 1 && ui_steps[k] < f->interval_s - 1e-9)
		k++;
	k += dir;
	k = k < 0 ? 0 : k >= UI_NSTEPS ? UI_NSTEPS - 1 : k;
	front_interval(f, ui_steps[k]);
}

static void
ui_collstack(struct ui *u, struct top_front *f)
{
	struct view_cs *cs = xcalloc(1, sizeof *cs);
	char line[2048];
	int j, code;

	front_lock_model(f);
	if ((j = view_stalled_job(&f->m)) >= 0)
		view_collstack(&f->m, j, NULL, cs);
	front_unlock_model(f);
	if (cs->argc == 0) {
		snprintf(u->msg, sizeof u->msg, "no stalled job to run collstack on");
		free(cs);
		return;
	}
	def_prog_mode();
	endwin();
	view_cs_line(cs, line, sizeof line);
	printf("colltop: %s\n", line);
	if (cs->note[0] != '\0')
		printf("colltop: %s\n", cs->note);
	code = front_collstack(f, cs);
	printf("\ncolltop: collstack exited with %d; press a key to go back\n", code);
	fflush(stdout);
	free(cs);
	reset_prog_mode();
	timeout(-1);
	getch();
	u->msg[0] = '\0';
}

/* A key outside the help, the filter and F6's list; 1 to quit. */
static int
ui_key(struct ui *u, struct top_front *f, int ch)
{
	int nc = view_ncols(u->by_host);

	u->msg[0] = '\0';
	switch (ch) {
	case 3: u->intr = 1; return 1;	/* Ctrl-C, a key here (ui_ctrl_c_key) */
	case 'q': case 'Q': case KEY_F(10): return 1;
	case 'h': case '?': case KEY_F(1): u->help = 1; break;
	case 't': case '\t': u->by_host = !u->by_host; u->top = 0; u->hcol = 0; break;
	case KEY_F(6): u->sorting = 1; u->pick = u->sort[u->by_host]; break;
	case '<': case ',': u->sort[u->by_host] = (u->sort[u->by_host] + nc - 1) % nc; break;
	case '>': case '.': u->sort[u->by_host] = (u->sort[u->by_host] + 1) % nc; break;
	case 'r': case 'R': case 'I': u->reverse = !u->reverse; break;
	case '/': case '\\': u->editing = 1; break;
	case 'p': case ' ': u->paused = !u->paused; break;
	case '+': case '=': ui_interval(f, 1); break;
	case '-': case '_': ui_interval(f, -1); break;
	case 'c': ui_collstack(u, f); break;
	case KEY_LEFT: u->hcol = u->hcol > 0 ? u->hcol - 1 : 0; break;
	case KEY_RIGHT: u->hcol += u->more; break;
	case KEY_UP: u->top = u->top > 0 ? u->top - 1 : 0; break;
	case KEY_DOWN: u->top++; break;
	case KEY_PPAGE: u->top = u->top > LINES / 2 ? u->top - LINES / 2 : 0; break;
	case KEY_NPAGE: u->top += LINES / 2; break;
	}
	return 0;
}

int
ui_step(struct ui *u, struct top_front *f, int ms)
{
	int ch, dirty;

	timeout(ms);
	ch = getch();
	if (ch == 3) {	/* Ctrl-C ends colltop from the help, the filter and F6's list too */
		u->intr = 1;
		return 2;
	}
	if (ch != ERR && ch != KEY_RESIZE) {
		if (u->help)
			u->help = 0;
		else if (u->editing)
			ui_edit(u, ch);
		else if (u->sorting)
			ui_sort_key(u, ch);
		else if (ui_key(u, f, ch))
			return u->intr ? 2 : 1;
	}
	front_lock_model(f);
	dirty = f->dirty;
	if (!u->paused)
		f->dirty = 0;
	front_unlock_model(f);
	if (ch != ERR || (!u->paused && (dirty || clock_now_ms() - u->drawn_ms >= 1000)))
		ui_draw(u, f);
	return 0;
}
