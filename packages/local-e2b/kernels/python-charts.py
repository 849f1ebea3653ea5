"""sandkeep local-e2b: what a matplotlib figure shows, as the `chart` of an E2B code-interpreter result.

Loaded by python-kernel.py the first time a figure is displayed (never imported before matplotlib is). The
shapes are those of @e2b/code-interpreter's chart types: a chart has `type`, `title` and `elements`; line,
scatter, bar and box-and-whisker charts add the axis labels and their units (the text in parentheses or
brackets of a label); line and scatter charts add each axis's ticks, tick labels and scale. A figure with
several axes is a `superchart` whose elements are the charts of its axes. Call `figure_chart(figure)` after
the figure was drawn (rendering the png draws it), so that the tick labels hold their text.
"""

import datetime
import math
import re

from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer
from matplotlib.lines import Line2D
from matplotlib.patches import PathPatch, Rectangle, Wedge
from matplotlib.text import Text
from matplotlib.ticker import FixedLocator

UNIT = re.compile(r"\s\(([^)]*)\)|\[([^\]]*)\]")
NO_LINE = ("None", "none", "", " ")


def clean(value, digits=10):
    """A number or date as JSON carries it: floats rounded to `digits` significant digits, NaN and inf as None."""
    if value is None:
        return None
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    kind = type(value).__name__
    if kind.startswith("datetime64"):
        return str(value.astype("datetime64[s]"))
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else None
    return value if isinstance(value, str) else str(value)


def text_or_none(text):
    return text if text else None


def unit_of(label):
    if not label:
        return None
    found = UNIT.search(label)
    return (found.group(1) or found.group(2)) if found else None


def converter_of(axis):
    get = getattr(axis, "get_converter", None)
    return get() if callable(get) else getattr(axis, "converter", None)


def scale_of(ax, axis, which):
    module = type(converter_of(axis)).__module__
    if module == "matplotlib.dates":
        return "datetime"
    if module == "matplotlib.category":
        return "categorical"
    return ax.get_xscale() if which == "x" else ax.get_yscale()


def ticks_of(axis):
    ticks = list(axis.get_ticklocs())
    if type(converter_of(axis)).__module__ == "matplotlib.dates":
        from matplotlib.dates import num2date

        return [num2date(tick).isoformat() for tick in ticks]
    return [clean(tick) for tick in ticks]


def labels_of(axis):
    return [label.get_text() for label in axis.get_ticklabels()]


def tick_label_at(axis, position):
    """The text of the tick at `position`, else the position itself."""
    for tick, label in zip(axis.get_ticklocs(), axis.get_ticklabels()):
        if math.isclose(tick, position, rel_tol=1e-9, abs_tol=1e-9) and label.get_text():
            return label.get_text()
    return f"{position:g}"


def is_rule(line):
    """A straight horizontal or vertical two-point line (axhline, axvline, a grid drawn by hand)."""
    x, y = line.get_xdata(), line.get_ydata()
    return len(x) == 2 and len(y) == 2 and (x[0] == x[1] or y[0] == y[1])


def artists_of(ax):
    children = getattr(ax, "_children", None)
    if children is None:
        children = [*ax.lines, *ax.patches, *ax.collections, *ax.images]
    return [child for child in children if not isinstance(child, Text)]


def kind_of(ax):
    artists = artists_of(ax)
    if not artists:
        return "unknown"
    if all(isinstance(artist, Line2D) for artist in artists):
        return "line"
    if any(isinstance(a, PathPatch) for a in artists) and all(isinstance(a, (PathPatch, Line2D)) for a in artists):
        return "box_and_whisker"
    shapes = [a for a in artists if not (isinstance(a, Line2D) and is_rule(a))]
    for kind, classes in (("scatter", PathCollection), ("pie", Wedge), ("bar", Rectangle)):
        if shapes and all(isinstance(artist, classes) for artist in shapes):
            return kind
    return "unknown"


def base(kind, ax):
    return {"type": kind, "title": text_or_none(ax.get_title()), "elements": []}


def planar(kind, ax):
    chart = base(kind, ax)
    x_label, y_label = text_or_none(ax.get_xlabel()), text_or_none(ax.get_ylabel())
    chart.update(x_label=x_label, y_label=y_label, x_unit=unit_of(x_label), y_unit=unit_of(y_label))
    return chart


def swap_axes(chart):
    chart["x_label"], chart["y_label"] = chart["y_label"], chart["x_label"]
    chart["x_unit"], chart["y_unit"] = chart["y_unit"], chart["x_unit"]


def unlabeled(label):
    return not label or label.startswith("_")


def point_chart(kind, ax):
    chart = planar(kind, ax)
    for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        chart[which + "_ticks"] = ticks_of(axis)
        chart[which + "_tick_labels"] = labels_of(axis)
        chart[which + "_scale"] = scale_of(ax, axis, which)
    if kind == "line":
        for number, line in enumerate(ax.get_lines()):
            if is_rule(line):
                continue
            label = line.get_label()
            points = [[clean(x), clean(y)] for x, y in zip(line.get_xdata(), line.get_ydata())]
            chart["elements"].append({"label": f"Line {number}" if unlabeled(label) else label, "points": points})
    else:
        for collection in ax.collections:
            points = [[clean(x), clean(y)] for x, y in collection.get_offsets()]
            chart["elements"].append({"label": collection.get_label(), "points": points})
    return chart


def bar_chart(ax):
    chart = planar("bar", ax)
    containers = [c for c in ax.containers if isinstance(c, BarContainer)]
    horizontal = bool(containers) and all(getattr(c, "orientation", None) == "horizontal" for c in containers)
    if horizontal:
        swap_axes(chart)
    for number, container in enumerate(containers):
        label = container.get_label()
        group = f"Group {number}" if unlabeled(label) else label
        for bar in container:
            if horizontal:
                position, value = bar.get_y() + bar.get_height() / 2, bar.get_width()
                name = tick_label_at(ax.yaxis, position)
            else:
                position, value = bar.get_x() + bar.get_width() / 2, bar.get_height()
                name = tick_label_at(ax.xaxis, position)
            chart["elements"].append({"label": name, "group": group, "value": clean(value)})
    return chart


def pie_chart(ax):
    chart = base("pie", ax)
    for wedge in ax.patches:
        if isinstance(wedge, Wedge):
            # pie() computes its angles in float32: seven significant digits are all they hold.
            angle = clean(abs(wedge.theta2 - wedge.theta1), 7)
            chart["elements"].append({"label": wedge.get_label(), "angle": angle, "radius": clean(wedge.r)})
    return chart


def box_chart(ax):
    """Reads each box back from what boxplot drew: the box (quartiles), the median, whiskers, fliers."""
    chart = planar("box_and_whisker", ax)
    boxes = [patch for patch in ax.patches if isinstance(patch, PathPatch)]
    extents = []
    for box in boxes:
        vertices = box.get_path().vertices
        extents.append((min(vertices[:, 0]), max(vertices[:, 0]), min(vertices[:, 1]), max(vertices[:, 1])))
    lines = [(line, list(line.get_xdata()), list(line.get_ydata())) for line in ax.lines]
    # boxplot puts its boxes at fixed ticks of the position axis: x for vertical boxes (the default).
    vertical = isinstance(ax.xaxis.get_major_locator(), FixedLocator) or not isinstance(
        ax.yaxis.get_major_locator(), FixedLocator
    )
    if not vertical:
        swap_axes(chart)
    position_axis = ax.xaxis if vertical else ax.yaxis
    for x0, x1, y0, y1 in extents:
        low, high, start, end = (y0, y1, x0, x1) if vertical else (x0, x1, y0, y1)
        center = (start + end) / 2
        element = {
            "label": tick_label_at(position_axis, center),
            "min": low,
            "first_quartile": low,
            "median": None,
            "third_quartile": high,
            "max": high,
            "outliers": [],
        }
        for line, x, y in lines:
            positions, values = (x, y) if vertical else (y, x)
            if not positions or not all(math.isclose(p, center) for p in positions):
                # Not on the box's axis: a median or a cap (they span the box or part of it).
                if len(values) == 2 and values[0] == values[1] and low <= values[0] <= high:
                    if math.isclose(min(positions), start) and math.isclose(max(positions), end):
                        element["median"] = values[0]
                continue
            if line.get_linestyle() in NO_LINE:
                element["outliers"].extend(v for v in values if v < low or v > high)
            elif len(values) == 2:
                if math.isclose(max(values), low):
                    element["min"] = min(values)
                elif math.isclose(min(values), high):
                    element["max"] = max(values)
        element["outliers"] = [clean(value) for value in element["outliers"]]
        chart["elements"].append({key: value if key in ("label", "outliers") else clean(value) for key, value in element.items()})
    return chart


def axes_chart(ax):
    kind = kind_of(ax)
    if kind in ("line", "scatter"):
        return point_chart(kind, ax)
    if kind == "bar":
        return bar_chart(ax)
    if kind == "pie":
        return pie_chart(ax)
    if kind == "box_and_whisker":
        return box_chart(ax)
    return base("unknown", ax)


def figure_chart(figure):
    """The chart of a drawn figure, or None for a figure with nothing plotted."""
    axes = figure.get_axes()
    if not axes or not any(ax.has_data() for ax in axes):
        return None
    if len(axes) == 1:
        return axes_chart(axes[0])
    suptitle = getattr(figure, "_suptitle", None)
    title = suptitle.get_text() if suptitle is not None else ""
    return {"type": "superchart", "title": text_or_none(title), "elements": [axes_chart(ax) for ax in axes]}
