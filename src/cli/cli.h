/* cli.h — what the CLI's files share: exit statuses and the one-line error printer. */
#ifndef EG_CLI_CLI_H
#define EG_CLI_CLI_H

#define EXIT_FAIL 1
#define EXIT_USAGE 2

/* Prints "edgegrad: <message>" as one line on stderr; returns `code`. */
int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
