"""The curves of a federated run as a picture (SVG, standard library only): the train loss and
the global model's validation loss per round, and its validation accuracy per round."""
from .._files import write_atomic

_W, _H, _M = 380, 250, 46  # a chart's width, height and margin


def _chart(x0, title, lines, top, rounds):
    """One chart's SVG elements; ``lines``: (name, colour, [(round, value), ...])."""
    def at(r, v):
        return (x0 + _M + (_W - 2 * _M) * r / max(rounds, 1),
                _H - _M - (_H - 2 * _M) * v / (top or 1))
    (left, bottom), (right, up) = at(0, 0), at(rounds, top)
    svg = [f'<text x="{x0 + _W / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>',
           f'<path d="M{left},{up} V{bottom} H{right}" fill="none" stroke="#000"/>',
           f'<text x="{x0 + _W / 2}" y="{_H - 10}" text-anchor="middle" font-size="11">round'
           f'</text>']
    svg += [f'<text x="{at(r, 0)[0]:.1f}" y="{bottom + 14}" text-anchor="middle" '
            f'font-size="10">{r}</text>' for r in range(rounds + 1)]
    svg += [f'<text x="{left - 4}" y="{at(0, top * q / 4)[1] + 3:.1f}" text-anchor="end" '
            f'font-size="10">{top * q / 4:.2f}</text>' for q in range(5)]
    for i, (name, colour, pts) in enumerate(lines):
        xy = [at(r, v) for r, v in pts]
        if not xy:
            continue
        svg.append(f'<polyline points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in xy)}" '
                   f'fill="none" stroke="{colour}" stroke-width="2"/>')
        svg += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}"/>' for x, y in xy]
        svg.append(f'<text x="{right}" y="{up + 12 + 14 * i}" text-anchor="end" font-size="11" '
                   f'fill="{colour}">{name}</text>')
    return svg


def write(path, rounds):
    """Draws the round records (round, train_loss, val_loss, val_accuracy) into ``path``."""
    n = max((r["round"] for r in rounds), default=0)

    def series(key):
        return [(r["round"], r[key]) for r in rounds if r.get(key) is not None]
    train, val, acc = series("train_loss"), series("val_loss"), series("val_accuracy")
    top = max([v for _, v in train + val] or [1.0]) * 1.05
    body = _chart(0, "loss", [("train (clients)", "#1f77b4", train),
                              ("val (global)", "#d62728", val)], top, n)
    body += _chart(_W, "global val accuracy", [("val", "#2ca02c", acc)], 1.0, n)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * _W}" height="{_H}" '
           f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="#fff"/>\n'
           + "\n".join(body) + "\n</svg>\n")
    return write_atomic(path, svg.encode())
