/* io_role.c — role names (eg_io_role_name of the public API) and the rules of io_role.h. */
#include "ir/io_role.h"

#include <stdio.h>
#include <string.h>

#include "util/error.h"

/* Indexed by eg_io_role; inputs' roles come first (EG_ROLE_DATA .. EG_ROLE_RANDOM). */
static const char *const role_names[] = {
    [EG_ROLE_DATA] = "data",         [EG_ROLE_LABEL] = "label",
    [EG_ROLE_PARAMETER] = "parameter", [EG_ROLE_BUFFER] = "buffer",
    [EG_ROLE_RANDOM] = "random",     [EG_ROLE_LOSS] = "loss",
    [EG_ROLE_GRADIENT] = "gradient", [EG_ROLE_BUFFER_UPDATE] = "buffer_update",
    [EG_ROLE_OUTPUT] = "output"};
enum { N_ROLES = sizeof role_names / sizeof role_names[0] };
_Static_assert(N_ROLES == EG_ROLE_OUTPUT + 1, "a name for every eg_io_role");

const char *eg_io_role_name(eg_io_role role) {
  return (unsigned)role < N_ROLES ? role_names[role] : "?";
}

static bool is_input_role(eg_io_role r) { return (unsigned)r <= EG_ROLE_RANDOM; }
static bool is_output_role(eg_io_role r) { return r >= EG_ROLE_LOSS && r <= EG_ROLE_OUTPUT; }

bool eg_io_role_parse(const char *name, bool is_input, eg_io_role *out) {
  for (int r = 0; r < N_ROLES; r++)
    if (strcmp(name, role_names[r]) == 0 && is_input == is_input_role((eg_io_role)r)) {
      *out = (eg_io_role)r;
      return true;
    }
  return false;
}

const char *eg_io_role_list(bool is_input) {
  return is_input ? "data, label, parameter, buffer, random"
                  : "loss, gradient, buffer_update, output";
}

/* "float32[3, 4]" of value `id` into buf. */
static const char *type_of(const eg_graph *g, int32_t id, char *buf, size_t size) {
  const eg_value *v = &g->values[id];
  char dims[128];
  snprintf(buf, size, "%s%s", eg_dtype_name(v->dtype), eg_fmt_ints(dims, sizeof dims, v->shape,
                                                                    v->rank));
  return buf;
}

static bool same_type(const eg_value *a, const eg_value *b) {
  bool same = a->dtype == b->dtype && a->rank == b->rank;
  for (int d = 0; same && d < a->rank; d++) same = a->shape[d] == b->shape[d];
  return same;
}

/* `where` of entry i of inputs or outputs: `inputs[2] "w": role "parameter"`. */
static const char *entry(char *buf, size_t size, bool is_input, int32_t i, const eg_named *e) {
  const char *role = (unsigned)e->role < N_ROLES ? role_names[e->role] : NULL;
  if (role)
    snprintf(buf, size, "%s[%d] \"%s\": role \"%s\"", is_input ? "inputs" : "outputs", (int)i,
             e->name, role);
  else
    snprintf(buf, size, "%s[%d] \"%s\": role code %d", is_input ? "inputs" : "outputs", (int)i,
             e->name, (int)e->role);
  return buf;
}

static eg_status check_input(const eg_graph *g, int32_t i) {
  const eg_named *in = &g->inputs[i];
  char w[256], t[160];
  if (!is_input_role(in->role))
    return eg_error(EG_ERR_INVALID, "%s: not a role of an input (%s)",
                    entry(w, sizeof w, true, i, in), eg_io_role_list(true));
  if ((in->role == EG_ROLE_RANDOM) != (in->random != EG_RANDOM_NONE))
    return eg_error(EG_ERR_INVALID, "%s (%s): an input holds a random draw (a Dropout mask, "
                    "listed in the graph's \"random_inputs\") exactly when its role is "
                    "\"random\"", entry(w, sizeof w, true, i, in),
                    in->random != EG_RANDOM_NONE ? "a random draw" : "no random draw");
  if (in->role == EG_ROLE_PARAMETER && g->values[in->value].dtype != EG_DTYPE_FLOAT32)
    return eg_error(EG_ERR_INVALID, "%s (%s): parameters are float32",
                    entry(w, sizeof w, true, i, in), type_of(g, in->value, t, sizeof t));
  return EG_OK;
}

/* Output o's own rules: an output role, "of" exactly for a gradient or a buffer_update, naming
 * an input of the matching role, dtype and shape; the loss a float32 scalar. */
static eg_status check_output(const eg_graph *g, int32_t o) {
  const eg_named *out = &g->outputs[o];
  char w[256], t[160], u[160];
  entry(w, sizeof w, false, o, out);
  if (!is_output_role(out->role))
    return eg_error(EG_ERR_INVALID, "%s: not a role of an output (%s)", w,
                    eg_io_role_list(false));
  const bool paired = out->role == EG_ROLE_GRADIENT || out->role == EG_ROLE_BUFFER_UPDATE;
  if (out->pair < -1 || out->pair >= g->n_inputs)
    return eg_error(EG_ERR_INVALID, "%s of input #%d: out of range [0, %d)", w, (int)out->pair,
                    (int)g->n_inputs);
  if (out->role == EG_ROLE_LOSS) {
    const eg_value *v = &g->values[out->value];
    if (v->dtype != EG_DTYPE_FLOAT32 || eg_value_numel(v) != 1)
      return eg_error(EG_ERR_INVALID, "%s (%s): the loss is a float32 scalar (one element)", w,
                      type_of(g, out->value, t, sizeof t));
  }
  if (!paired && out->pair >= 0)
    return eg_error(EG_ERR_INVALID, "%s of \"%s\": only a gradient or a buffer_update names an "
                    "input (\"of\")", w, g->inputs[out->pair].name);
  if (!paired) return EG_OK;
  const bool grad = out->role == EG_ROLE_GRADIENT;
  if (out->pair < 0)
    return eg_error(EG_ERR_INVALID, "%s without \"of\": a %s names the %s input it belongs to",
                    w, grad ? "gradient" : "buffer_update", grad ? "parameter" : "buffer");
  const eg_named *in = &g->inputs[out->pair];
  const size_t len = strlen(w);
  snprintf(w + len, sizeof w - len, " of \"%s\"", in->name);
  if (in->role != (grad ? EG_ROLE_PARAMETER : EG_ROLE_BUFFER))
    return eg_error(EG_ERR_INVALID, "%s: input %s is not a %s (its role: \"%s\")", w, in->name,
                    grad ? "parameter" : "buffer", eg_io_role_name(in->role));
  if (!same_type(&g->values[out->value], &g->values[in->value]))
    return eg_error(EG_ERR_INVALID, "%s (%s, input %s %s): a %s has its %s's dtype and shape", w,
                    type_of(g, out->value, t, sizeof t), in->name,
                    type_of(g, in->value, u, sizeof u), grad ? "gradient" : "buffer_update",
                    grad ? "parameter" : "buffer");
  return EG_OK;
}

eg_status eg_graph_check_roles(eg_graph *g) {
  int32_t loss = -1;
  bool training = false;
  for (int32_t i = 0; i < g->n_inputs; i++) {
    EG_TRY(check_input(g, i));
    g->inputs[i].pair = -1;
  }
  for (int32_t o = 0; o < g->n_outputs; o++) {
    EG_TRY(check_output(g, o));
    eg_named *out = &g->outputs[o];
    char w[256];
    training |= out->role == EG_ROLE_GRADIENT;
    if (out->role == EG_ROLE_LOSS && loss >= 0)
      return eg_error(EG_ERR_INVALID, "%s: outputs[%d] \"%s\" is the loss already: a graph has "
                      "at most one loss", entry(w, sizeof w, false, o, out), (int)loss,
                      g->outputs[loss].name);
    if (out->role == EG_ROLE_LOSS) loss = o;
    if (out->pair < 0) continue;
    eg_named *in = &g->inputs[out->pair];
    if (in->pair >= 0)
      return eg_error(EG_ERR_INVALID, "%s of \"%s\": outputs[%d] \"%s\" is its %s already: each "
                      "%s has one", entry(w, sizeof w, false, o, out), in->name, (int)in->pair,
                      g->outputs[in->pair].name,
                      out->role == EG_ROLE_GRADIENT ? "gradient" : "update",
                      out->role == EG_ROLE_GRADIENT ? "parameter" : "buffer");
    in->pair = o;
  }
  for (int32_t i = 0; training && i < g->n_inputs; i++) {
    const eg_named *in = &g->inputs[i];
    char w[256];
    if (in->pair < 0 && (in->role == EG_ROLE_PARAMETER || in->role == EG_ROLE_BUFFER))
      return eg_error(EG_ERR_INVALID, "%s: no output is its %s: in a training step (a graph "
                      "with gradient outputs) each %s has exactly one",
                      entry(w, sizeof w, true, i, in),
                      in->role == EG_ROLE_PARAMETER ? "gradient" : "update (a buffer_update)",
                      in->role == EG_ROLE_PARAMETER ? "parameter" : "buffer");
  }
  return EG_OK;
}
