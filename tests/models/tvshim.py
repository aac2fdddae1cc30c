"""torchvision's model definitions, importable beside any PyTorch.

The model zoo (`make models`) builds torchvision's own definitions of ResNet, MobileNet,
EfficientNet and the other families. Debian's python3-torchvision 0.14.1 holds them as plain
Python, but its package __init__ loads the compiled torchvision::nms operators, which exist only
for Debian's PyTorch 1.13; PyPI's torchvision wheels pin one PyTorch each (the one matching
2.13's CPU build is not published). The model classes themselves use nothing but torch.nn, so
this module imports them without running torchvision's __init__: it registers the packages
torchvision, torchvision.models, torchvision.ops and torchvision.transforms as empty package
modules whose search path is Debian's folder, stubs the two modules that touch the compiled
part (torchvision.extension, torchvision.transforms._presets, used only for pretrained-weight
metadata), and leaves everything else to the ordinary import of the real files.

Under Debian's PyTorch 1.13 the real package imports as it is and no shim is needed.

    from tvshim import load
    model = load("resnet").resnet18(num_classes=10)
"""
import enum
import importlib
import os
import sys
import types

DEBIAN_TORCHVISION = "/usr/lib/python3/dist-packages/torchvision"


def _package(name, folder):
    mod = types.ModuleType(name)
    mod.__path__ = [folder]
    mod.__file__ = os.path.join(folder, "__init__.py")
    sys.modules[name] = mod
    return mod


def _install(root):
    tv = _package("torchvision", root)
    ext = types.ModuleType("torchvision.extension")
    ext._HAS_OPS = False

    def _assert_has_ops():
        raise RuntimeError("tvshim: torchvision's compiled operators are not loaded")

    ext._assert_has_ops = _assert_has_ops
    sys.modules["torchvision.extension"] = ext
    tv.extension = ext
    tv._is_tracing = lambda: False
    tv.models = _package("torchvision.models", os.path.join(root, "models"))
    tv.ops = _package("torchvision.ops", os.path.join(root, "ops"))
    tv.transforms = _package("torchvision.transforms", os.path.join(root, "transforms"))

    presets = types.ModuleType("torchvision.transforms._presets")

    class ImageClassification:  # only referenced by pretrained-weight metadata
        def __init__(self, *args, **kwargs):
            pass

    class SemanticSegmentation(ImageClassification):  # the segmentation models' metadata
        pass

    class InterpolationMode(enum.Enum):
        NEAREST = "nearest"
        BILINEAR = "bilinear"
        BICUBIC = "bicubic"

    for cls in (ImageClassification, SemanticSegmentation, InterpolationMode):
        setattr(presets, cls.__name__, cls)
    sys.modules["torchvision.transforms._presets"] = presets
    tv.transforms._presets = presets
    tv.transforms.InterpolationMode = InterpolationMode
    # what torchvision.ops's __init__ would export and the model files use
    tv.ops.StochasticDepth = importlib.import_module(
        "torchvision.ops.stochastic_depth").StochasticDepth
    tv.ops.stochastic_depth = sys.modules["torchvision.ops.stochastic_depth"].stochastic_depth
    misc = importlib.import_module("torchvision.ops.misc")
    tv.ops.misc = misc


def _ready():
    if "torchvision" in sys.modules:
        return
    try:
        import torchvision  # noqa: F401  (the real package, where it imports: PyTorch 1.13)
        return
    except Exception:  # the compiled part does not match this PyTorch
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
    if not os.path.isdir(os.path.join(DEBIAN_TORCHVISION, "models")):
        raise RuntimeError("tvshim: torchvision's model definitions not found at %s "
                           "(install Debian's python3-torchvision)" % DEBIAN_TORCHVISION)
    _install(DEBIAN_TORCHVISION)


def load(family):
    """The module torchvision.models.<family> (e.g. "resnet", "mobilenetv3")."""
    _ready()
    return importlib.import_module("torchvision.models." + family)
