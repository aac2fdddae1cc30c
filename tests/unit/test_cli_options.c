/* test_cli_options.c — the CLI's option parser (src/cli/options.c) and every command's table,
 * linked from the CLI's own code (main() renamed, as the fuzz targets link it).
 *
 * "--help tells the truth": for edgegrad itself and every command, each option of its table
 * (name and alias) is named in its --help text, and each option its --help names is in its
 * table; an option the text names right after another command's name ("compile --precision")
 * or in a quoted command line of another ("`edgegrad run --dump-partitions`") must be in that
 * command's table instead. Every table keeps options.h's rules (opt_table_ok).
 *
 * The parser on a table with every kind of option: values, --name=VALUE, aliases, lists, the
 * record of what was given, and each refusal's one line and exit status. */
#include <stddef.h>
#include <unistd.h>

#include "cli/cli.h"
#include "eg_test.h"

/* ---- the commands' tables against their --help ---- */

/* The table of the command named `name` ("edgegrad": edgegrad's own); NULL when there is no
 * such command or it has no table; *known tells whether the name is a command's. */
static const opt_command *table_of(const char *name, size_t len, bool *known) {
  *known = true;
  if (len == 8 && strncmp(name, "edgegrad", 8) == 0) return &cli_options;
  for (const cli_command *c = cli_commands; c->name; c++)
    if (strlen(c->name) == len && strncmp(name, c->name, len) == 0) return c->options;
  *known = false;
  return NULL;
}

static bool in_table(const opt_command *c, const char *opt, size_t len) {
  if ((len == 2 && strncmp(opt, "-h", 2) == 0) || (len == 6 && strncmp(opt, "--help", 6) == 0))
    return true;
  for (int k = 0; k < c->n_opts; k++) {
    const opt_def *o = &c->opts[k];
    if ((strlen(o->name) == len && strncmp(opt, o->name, len) == 0) ||
        (o->alias && strlen(o->alias) == len && strncmp(opt, o->alias, len) == 0))
      return true;
  }
  return false;
}

/* The next option the help text names at or after *p: "-x" or "--word-word" that starts the
 * text or follows a space, a newline or one of "[|(,/`" (so "1e-4", "NCHW <-> NHWC" and
 * "x - y" are none). Its length in *len, *p past it; NULL at the end. */
static const char *next_option(const char *text, const char **p, size_t *len) {
  for (const char *s = *p; *s; s++) {
    if (s[0] != '-' || (s > text && !strchr(" \n[|(,/`", s[-1]))) continue;
    const char *e = s + 1;
    if (*e == '-') e++;
    if (*e < 'a' || *e > 'z') continue;
    while ((*e >= 'a' && *e <= 'z') || (*e >= '0' && *e <= '9') || *e == '-') e++;
    while (e[-1] == '-') e--;
    *len = (size_t)(e - s);
    *p = e;
    return s;
  }
  return NULL;
}

/* The command whose option the help text names at s, when it is another command's: the one
 * a `edgegrad CMD ...` span around it runs, else the word right before it ("compile" in
 * "compile --precision"). The name and its length, 0 when neither is there. */
static size_t command_before(const char *text, const char *s, const char **word) {
  const char *tick = NULL;
  int ticks = 0;
  for (const char *t = text; t < s; t++)
    if (*t == '`') ticks++, tick = t;
  if (ticks % 2 && strncmp(tick + 1, "edgegrad ", 9) == 0) {
    *word = tick + 10;
    return strcspn(*word, " `");
  }
  if (s == text || s[-1] != ' ') return 0;
  const char *b = s - 1;
  while (b > text && ((b[-1] >= 'a' && b[-1] <= 'z') || b[-1] == '-')) b--;
  *word = b;
  return (size_t)(s - 1 - b);
}

/* What is untrue in command c's --help: each option it names that is not in the table it
 * belongs to, each option of c's table it does not name, and a table that breaks options.h's
 * rules. The count; each one a line on `report` (NULL: none). */
static int help_untruths(const char *name, const opt_command *c, FILE *report) {
  char why[256];
  int bad = 0;
  if (!opt_table_ok(c, why, sizeof why) && ++bad && report) fprintf(report, "%s\n", why);
  const char *p = c->usage, *s, *word;
  size_t len;
  while ((s = next_option(c->usage, &p, &len))) {
    const opt_command *owner = c;
    bool known = false;
    size_t wlen = command_before(c->usage, s, &word);
    const opt_command *other = wlen ? table_of(word, wlen, &known) : NULL;
    if (known && !other) continue; /* a command that parses its own arguments */
    if (known) owner = other;
    if (!in_table(owner, s, len) && ++bad && report)
      fprintf(report, "%s --help names %.*s, which %s does not take\n", name, (int)len, s,
              owner->name ? owner->name : "edgegrad");
  }
  for (int k = 0; k < c->n_opts; k++) {
    const char *const names[] = {c->opts[k].name, c->opts[k].alias};
    for (int j = 0; j < 2 && names[j]; j++) {
      bool found = false;
      for (p = c->usage; !found && (s = next_option(c->usage, &p, &len));)
        found = strlen(names[j]) == len && strncmp(s, names[j], len) == 0;
      if (!found && ++bad && report)
        fprintf(report, "%s --help does not name %s\n", name, names[j]);
    }
  }
  return bad;
}

static void test_help_tells_truth(void) {
  EG_CHECK(help_untruths("edgegrad", &cli_options, stderr) == 0);
  int n = 0;
  for (const cli_command *c = cli_commands; c->name; c++, n++) {
    if (!c->options) continue;
    EG_CHECK_MSG(c->options->name && strcmp(c->options->name, c->name) == 0,
                 "command %s has the table of %s", c->name,
                 c->options->name ? c->options->name : "edgegrad");
    EG_CHECK_MSG(help_untruths(c->name, c->options, stderr) == 0, "%s", c->name);
  }
  EG_CHECK(n == 7);
}

/* The checker itself: how it reads options out of a text and whose they are, and that it finds
 * an option the help names but the table lacks, one the help leaves out, and one the help
 * gives to another command that lacks it. */
static void test_help_checker(void) {
  const char *p, *s, *word;
  size_t len;
  const char text[] = "[--a-b N] -q, --quiet 1e-4 NCHW <-> NHWC x - y (--c|--d) compile --e "
                      "`edgegrad run M\n--f`";
  const char *want[] = {"--a-b", "-q", "--quiet", "--c", "--d", "--e", "--f"};
  int n = 0;
  for (p = text; (s = next_option(text, &p, &len)); n++)
    EG_CHECK(n < 7 && strlen(want[n]) == len && strncmp(s, want[n], len) == 0);
  EG_CHECK(n == 7);
  EG_CHECK(command_before(text, strstr(text, "--e"), &word) == 7 &&
           strncmp(word, "compile", 7) == 0);
  EG_CHECK(command_before(text, strstr(text, "--f"), &word) == 3 && strncmp(word, "run", 3) == 0);
  EG_CHECK(command_before(text, strstr(text, "--c"), &word) == 0);
  bool known;
  EG_CHECK(table_of("compile", 7, &known) && known);
  EG_CHECK(!table_of("frob", 4, &known) && !known);
  typedef struct {
    bool x, y;
  } xy;
  const opt_def opts[] = {{.name = "--x", .kind = OPT_FLAG, OPT_AT(xy, x)},
                          {.name = "--y", .alias = "-y", .kind = OPT_FLAG, OPT_AT(xy, y)}};
  const opt_command ok = {.name = "t", .usage = "[--x] -y, --y; see compile --soc",
                          OPT_OPTIONS(opts)};
  const opt_command untrue = {.name = "t", .usage = "[--x] [--z] -y; see compile --zz",
                              OPT_OPTIONS(opts)};
  EG_CHECK(help_untruths("t", &ok, stderr) == 0);
  EG_CHECK(help_untruths("t", &untrue, NULL) == 3); /* --z, --zz, --y */
}

/* ---- the parser, on a table of every kind ---- */

typedef struct demo_args {
  bool flag, shuffle;
  const char *str, *bytes_text, *custom, *first, *second;
  int small, choice, n_list;
  long big;
  double num, any, a, b;
  size_t bytes;
  const char **list;
} demo_args;

static int parse_custom(const char *cmd, const char *opt, const char *v, void *field) {
  if (strcmp(v, "bad") == 0) return fail(EXIT_USAGE, "%s: %s %s: not good", cmd, opt, v);
  *(const char **)field = v;
  return 0;
}

static const opt_choice demo_choices[] = {{"one", 1}, {"two", 2}, {"three", 3}, {NULL, 0}};

static const opt_def demo_opts[] = {
    {.name = "--flag", .alias = "-f", .kind = OPT_FLAG, OPT_AT(demo_args, flag)},
    {.name = "--no-shuffle", .kind = OPT_FLAG, .clears = true, OPT_AT(demo_args, shuffle)},
    {.name = "--str", .alias = "-s", .kind = OPT_STRING, .arg = "S", OPT_AT(demo_args, str)},
    {.name = "--small", .kind = OPT_INT, .arg = "N", OPT_AT(demo_args, small), .lo = 1, .hi = 1024},
    {.name = "--big", .kind = OPT_INT, .arg = "N", OPT_AT(demo_args, big), .lo = 0,
     .hi = 1L << 40},
    {.name = "--num", .kind = OPT_NUMBER, .arg = "X", OPT_AT(demo_args, num), .min = 0},
    {.name = "--any", .kind = OPT_NUMBER, .arg = "X", OPT_AT(demo_args, any), .min = -HUGE_VAL},
    {.name = "--pair", .kind = OPT_PAIR, .arg = "A,B", OPT_AT(demo_args, a), OPT_AT2(demo_args, b)},
    {.name = "--bytes", .kind = OPT_SIZE, .arg = "SIZE", OPT_AT(demo_args, bytes),
     OPT_AT2(demo_args, bytes_text)},
    {.name = "--choice", .kind = OPT_CHOICE, .arg = "C", OPT_AT(demo_args, choice),
     .choices = demo_choices},
    {.name = "--list", .kind = OPT_LIST, .arg = "L", OPT_AT(demo_args, list),
     OPT_AT2(demo_args, n_list)},
    {.name = "--custom", .kind = OPT_CUSTOM, .arg = "C", OPT_AT(demo_args, custom),
     .parse = parse_custom},
    {.name = "--soc", .kind = OPT_FLAG, OPT_AT(demo_args, flag)},
    {.name = "--so", .kind = OPT_FLAG, OPT_AT(demo_args, flag)},
};
static const opt_pos demo_pos[] = {{"model", offsetof(demo_args, first)},
                                   {"DIR", offsetof(demo_args, second)}};
static const opt_command demo = {.name = "demo", .usage = "usage: demo\n",
                                 OPT_OPTIONS(demo_opts), OPT_POSITIONALS(demo_pos),
                                 .n_required = 1, .synopsis = "MODEL DIR"};

/* opt_parse of the words of `line` (split at spaces) on `c`, its stderr into err; the list's
 * entries, joined by '|', into listed[64]. */
static int parse_line(const opt_command *c, const char *line, demo_args *a, opt_given *g,
                      char *err, size_t size, char *listed) {
  char words[512], *argv[32];
  int argc = 0;
  snprintf(words, sizeof words, "%s", line);
  for (char *w = strtok(words, " "); w && argc < 32; w = strtok(NULL, " ")) argv[argc++] = w;
  fflush(stderr);
  FILE *cap = tmpfile();
  int saved = dup(2);
  dup2(fileno(cap), 2);
  *a = (demo_args){.shuffle = true};
  int rc = opt_parse(c, argc, argv, a, g);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(cap);
  size_t n = fread(err, 1, size - 1, cap);
  err[n] = '\0';
  fclose(cap);
  /* the list's slots point into words: gone after the return */
  listed[0] = '\0';
  for (int k = 0; k < a->n_list; k++)
    snprintf(listed + strlen(listed), 64 - strlen(listed), "%s%s", k ? "|" : "", a->list[k]);
  free(a->list);
  a->list = NULL;
  return rc;
}

static void test_parse_values(void) {
  demo_args a;
  opt_given g;
  char err[512], listed[64];
  EG_CHECK(parse_line(&demo, "m -f --no-shuffle -s x --small 1024 --big 1099511627776 --num 0 "
                      "--any -1e300 --pair 0.9,-2 --bytes 2K --choice three --custom ok d",
                      &a, &g, err, sizeof err, listed) == 0);
  EG_CHECK_MSG(!err[0], "%s", err);
  EG_CHECK(a.flag && !a.shuffle && strcmp(a.str, "x") == 0 && a.small == 1024);
  EG_CHECK(a.big == 1L << 40 && a.num == 0 && a.any == -1e300 && a.a == 0.9 && a.b == -2);
  EG_CHECK(a.bytes == 2048 && strcmp(a.bytes_text, "2K") == 0 && a.choice == 3);
  EG_CHECK(strcmp(a.custom, "ok") == 0 && strcmp(a.first, "m") == 0 && strcmp(a.second, "d") == 0);
  EG_CHECK(opt_was_given(&demo, &g, "--flag") && opt_was_given(&demo, &g, "--bytes"));
  EG_CHECK(!opt_was_given(&demo, &g, "--list") && !opt_was_given(&demo, &g, "--soc"));
  /* --name=VALUE, the last of a scalar given twice, a list in order, "-" a positional */
  EG_CHECK(parse_line(&demo, "--small=3 --small 4 --str= --list a --list=b=c -", &a, &g, err,
                      sizeof err, listed) == 0);
  EG_CHECK(a.small == 4 && a.str && !a.str[0] && strcmp(a.first, "-") == 0 && !a.second);
  EG_CHECK(opt_was_given(&demo, &g, "--list") && !opt_was_given(&demo, &g, "--flag"));
  EG_CHECK(a.n_list == 2 && strcmp(listed, "a|b=c") == 0);
  /* a value is the next argument whatever it looks like */
  EG_CHECK(parse_line(&demo, "m --str --flag", &a, &g, err, sizeof err, listed) == 0);
  EG_CHECK(strcmp(a.str, "--flag") == 0 && !a.flag);
  /* --so and --soc are two options: neither is taken for the other */
  EG_CHECK(parse_line(&demo, "m --soc", &a, &g, err, sizeof err, listed) == 0);
  EG_CHECK(opt_was_given(&demo, &g, "--soc") && !opt_was_given(&demo, &g, "--so"));
  EG_CHECK(parse_line(&demo, "m --so", &a, &g, err, sizeof err, listed) == 0);
  EG_CHECK(opt_was_given(&demo, &g, "--so") && !opt_was_given(&demo, &g, "--soc"));
  /* --help stops: exit 0, nothing on stderr, whatever follows */
  EG_CHECK(parse_line(&demo, "m --help --bogus", &a, &g, err, sizeof err, listed) == OPT_STOP &&
           !err[0]);
  EG_CHECK(parse_line(&demo, "-h", &a, &g, err, sizeof err, listed) == OPT_STOP);
}

static void test_parse_refusals(void) {
  static const struct {
    const char *line, *message;
  } cases[] = {
      {"m --small", "edgegrad: demo: --small needs a value (N)\n"},
      {"m --bogus", "edgegrad: demo: option --bogus unknown (see edgegrad demo --help)\n"},
      {"m --bogus=1", "edgegrad: demo: option --bogus unknown (see edgegrad demo --help)\n"},
      {"m --soc=x", "edgegrad: demo: --soc=x: --soc takes no value\n"},
      {"m --socx", "edgegrad: demo: option --socx unknown (see edgegrad demo --help)\n"},
      {"m --smal 3", "edgegrad: demo: option --smal unknown (see edgegrad demo --help)\n"},
      {"m -x", "edgegrad: demo: option -x unknown (see edgegrad demo --help)\n"},
      {"m --small 0", "edgegrad: demo: --small 0: expected an integer in [1, 1024]\n"},
      {"m --small 1025", "edgegrad: demo: --small 1025: expected an integer in [1, 1024]\n"},
      {"m --small 2x", "edgegrad: demo: --small 2x: expected an integer in [1, 1024]\n"},
      {"m --big 99999999999999999999",
       "edgegrad: demo: --big 99999999999999999999: expected an integer in [0, 1099511627776]\n"},
      {"m --num -1", "edgegrad: demo: --num -1: expected a finite number >= 0\n"},
      {"m --num inf", "edgegrad: demo: --num inf: expected a finite number >= 0\n"},
      {"m --any nan", "edgegrad: demo: --any nan: expected a finite number\n"},
      {"m --pair 1", "edgegrad: demo: --pair 1: expected two numbers A,B (e.g. 0.9,0.999)\n"},
      {"m --pair 1,x", "edgegrad: demo: --pair 1,x: expected two numbers A,B (e.g. 0.9,0.999)\n"},
      {"m --bytes 0", "edgegrad: demo: --bytes 0: expected a positive whole number of bytes, "
                      "optionally with K, M or G (e.g. 512M, 2G)\n"},
      {"m --choice four", "edgegrad: demo: --choice four: expected one, two or three\n"},
      {"m --custom bad", "edgegrad: demo: --custom bad: not good\n"},
      {"", "edgegrad: demo: no model given: give MODEL DIR (see edgegrad demo --help)\n"},
      {"m d e", "edgegrad: demo: a third argument e: give MODEL DIR\n"},
  };
  demo_args a;
  char err[512], listed[64];
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    int rc = parse_line(&demo, cases[k].line, &a, NULL, err, sizeof err, listed);
    EG_CHECK_MSG(rc == EXIT_USAGE && strcmp(err, cases[k].message) == 0,
                 "'%s': exit %d, stderr '%s', want '%s'", cases[k].line, rc, err,
                 cases[k].message);
  }
  /* one positional, none, and edgegrad's own options */
  const opt_command one = {.name = "one", .usage = "", .pos = demo_pos, .n_pos = 1,
                           .n_required = 1, .synopsis = "MODEL"};
  const opt_command none = {.name = "none", .usage = ""};
  const opt_command top = {.usage = ""};
  EG_CHECK(parse_line(&one, "a b", &a, NULL, err, sizeof err, listed) == EXIT_USAGE &&
           strcmp(err, "edgegrad: one: a second model b: give one MODEL\n") == 0);
  EG_CHECK(parse_line(&none, "a", &a, NULL, err, sizeof err, listed) == EXIT_USAGE &&
           strcmp(err, "edgegrad: none: argument a unknown (see edgegrad none --help)\n") == 0);
  EG_CHECK(parse_line(&top, "--x", &a, NULL, err, sizeof err, listed) == EXIT_USAGE &&
           strcmp(err, "edgegrad: option --x unknown (see edgegrad --help)\n") == 0);
}

static void test_table_rules(void) {
  char why[256];
  EG_CHECK(opt_table_ok(&demo, why, sizeof why));
  const opt_def wrong[][1] = {
      {{.name = "--n", .kind = OPT_INT, .arg = "N", OPT_AT(demo_args, small), .lo = 0,
        .hi = 1L << 40}},                                            /* int too small for hi */
      {{.name = "--n", .kind = OPT_NUMBER, .arg = "N", OPT_AT(demo_args, small)}}, /* not double */
      {{.name = "--f", .kind = OPT_FLAG, .arg = "F", OPT_AT(demo_args, flag)}}, /* flag, value */
      {{.name = "--s", .kind = OPT_STRING, OPT_AT(demo_args, str)}},            /* no value name */
      {{.name = "-s", .kind = OPT_STRING, .arg = "S", OPT_AT(demo_args, str)}}, /* not --word */
      {{.name = "--help", .kind = OPT_FLAG, OPT_AT(demo_args, flag)}},          /* the parser's */
      {{.name = "--l", .kind = OPT_LIST, .arg = "L", OPT_AT(demo_args, list)}}, /* no count */
      {{.name = "--c", .kind = OPT_CHOICE, .arg = "C", OPT_AT(demo_args, choice)}}, /* none */
  };
  for (size_t k = 0; k < sizeof wrong / sizeof *wrong; k++) {
    const opt_command c = {.name = "bad", .usage = "", .opts = wrong[k], .n_opts = 1};
    EG_CHECK_MSG(!opt_table_ok(&c, why, sizeof why), "table %zu accepted", k);
  }
  const opt_def twice[] = {{.name = "--a", .kind = OPT_FLAG, OPT_AT(demo_args, flag)},
                           {.name = "--a", .kind = OPT_FLAG, OPT_AT(demo_args, flag)}};
  const opt_command c = {.name = "bad", .usage = "", OPT_OPTIONS(twice)};
  EG_CHECK(!opt_table_ok(&c, why, sizeof why) && strstr(why, "--a: in the table twice"));
}

int main(void) {
  EG_RUN(test_help_checker);
  EG_RUN(test_help_tells_truth);
  EG_RUN(test_parse_values);
  EG_RUN(test_parse_refusals);
  EG_RUN(test_table_rules);
  return eg_test_summary();
}
