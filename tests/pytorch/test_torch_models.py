import pytest
import torch

from gpu_course.tracks import torch as gc
from gpu_course.tracks.torch.models import CifarResNet

# trainable parameters of GluonCV's cifar_resnet20_v1, _56_v1, _110_v1, cifar_wideresnet16_10
# (GluonCV's count for the WRN is 6 higher: it keeps an unused scale and shift for the
# input BatchNorm that it creates with scale=False, center=False)
GLUONCV_PARAMETERS = {"resnet20": 272_474, "resnet56": 855_770, "resnet110": 1_730_714,
                      "wrn16_10": 17_116_666}


@pytest.mark.parametrize("name", sorted(GLUONCV_PARAMETERS))
def test_models_have_gluoncv_parameter_counts(name):
    net = gc.get_model(name)
    assert sum(p.numel() for p in net.parameters()) == GLUONCV_PARAMETERS[name]


@pytest.mark.parametrize("name", ["resnet20", "wrn16_10", "tiny"])
def test_models_map_cifar_images_to_class_scores(name):
    net = gc.get_model(name, classes=7).eval()
    with torch.no_grad():
        assert net(torch.randn(2, 3, 32, 32)).shape == (2, 7)


def test_resnet_stages_follow_gluoncv():
    net = CifarResNet(20)
    stem, bn = net.features[0], net.features[1]
    assert (stem.out_channels, stem.kernel_size, type(bn)) == (16, (3, 3), torch.nn.BatchNorm2d)
    stages = [net.features[i] for i in (2, 3, 4)]
    assert [len(s) for s in stages] == [3, 3, 3]
    assert stages[0][0].downsample is None  # 16 -> 16 channels: identity shortcut
    shortcut = stages[1][0].downsample[0]
    assert (shortcut.kernel_size, shortcut.stride, shortcut.out_channels) == ((1, 1), (2, 2), 32)


def test_get_model_accepts_a_config_and_rejects_unknown_names(small_cfg):
    assert isinstance(gc.get_model(small_cfg), torch.nn.Module)
    with pytest.raises(ValueError, match="resnet20"):
        gc.get_model("resnet18")
    with pytest.raises(ValueError, match="6n \\+ 2"):
        CifarResNet(21)
