/* eg_test_json.h — JSON snippets for the graphs C unit tests write (docs/graph-format.md), for
 * eg_test_graph_json (eg_test_graph.h) and the lowering fixture (eg_test_lower.h):
 *   T(id, "[2, 3]") / TI(...)    a float32 / int64 tensor value
 *   TUPLE(id, "[1, 2]")          a tuple value of those element ids
 *   IN(name, id)                 an input (or output) naming value id
 *   V(id), F(x)                  a value argument, a float argument
 *   NODEK(name, target, args, kwargs, out), NODE(name, target, args, out)   a node
 *   GETITEM(name, tuple, i, out) element i of a tuple */
#ifndef EG_TEST_JSON_H
#define EG_TEST_JSON_H

#define T(id, shape) "{\"id\": " #id ", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": " \
                     shape "}"
#define TI(id, shape) "{\"id\": " #id ", \"kind\": \"tensor\", \"dtype\": \"int64\", \"shape\": " \
                      shape "}"
#define TUPLE(id, elems) "{\"id\": " #id ", \"kind\": \"tuple\", \"elements\": " elems "}"
#define IN(name, id) "{\"name\": \"" name "\", \"value\": " #id "}"
#define V(id) "{\"value\": " #id "}"
#define F(x) "{\"float\": " #x "}"
#define NODEK(name, target, args, kwargs, out) "{\"name\": \"" name "\", \"target\": \"" target \
                                               "\", \"args\": " args ", \"kwargs\": " kwargs   \
                                               ", \"output\": " #out "}"
#define NODE(name, target, args, out) NODEK(name, target, args, "{}", out)
#define GETITEM(name, tuple, i, out) NODE(name, "getitem", "[" V(tuple) ", " #i "]", out)

#endif
