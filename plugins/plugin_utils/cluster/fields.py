# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Every field of the ClusterPolicy (CRD nvidia.com/v1 of GPU Operator v26.7.0), and what this collection does with it.

Data, one row a line: FIELDS maps each leaf path of the CRD's spec (a list's items as `name[]`) to (its CRD type,
its status here, why). HONOURED: the value takes effect, as the text says. NOT_APPLICABLE: accepted whatever its value
and without effect here, for the reason given (the Operator's own Deployment, OpenShift, a deprecated field, what the
Operator deploys only with a switch that is refused). REFUSED: wrong to ignore, so a run with it stops, naming the field
and the reason - unless the value is empty, false, one of the row's defaults (the CRD's default and the chart's value),
or the field's section is off (its `enabled` false, or left out where the Operator's default is off).

CHART_FIELDS are the Helm chart's values that are not ClusterPolicy fields (`gpu_operator_helm_values`, helm_values.py),
by values path; SPEC_EXTRAS, the chart's config fields the ClusterPolicy sections here take as well.

tests/unit/plugins/plugin_utils/cluster/test_fields.py walks every path of the CRD (copied unchanged into
tests/fixtures/gpu-operator/) and fails on one without its row; tools/policy_fields.py writes the table into
docs/coming-from-gpu-operator.md. A change that honours a field changes its row here and the schema of its section.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

HONOURED = 'honoured'
NOT_APPLICABLE = 'not applicable'
REFUSED = 'refused'
STATUSES = (HONOURED, NOT_APPLICABLE, REFUSED)

# The sections with refused fields whose `enabled` decides whether they matter, and the Operator's default for a section
# given without it (api/nvidia/v1/clusterpolicy_types.go, IsEnabled).
SWITCHES = {'driver': True, 'toolkit': True}

# --- honoured: how ------------------------------------------------------------------------------
H_ENABLED = 'deploys the operand, or removes what this collection deployed of it'
H_REPOSITORY = 'the repository of its image; the default one is mirrored by `gpu_operator_registry`, one set here is used as is'
H_IMAGE = 'the name of its image'
H_VERSION = 'the tag of its image; a `sha256:` digest pins `image@sha256:...`, as the Operator does'
H_PULL_POLICY = 'the imagePullPolicy of its containers (Always, Never or IfNotPresent; another value is refused)'
H_PULL_SECRETS = 'the imagePullSecrets of its Pod'
H_RESOURCES = 'the resources of the containers of its Pod'
H_ARGS = "merged by flag name into its program's args (deviation: args)"
H_ENV = "merged by name into its container's env, as the Operator merges it"
H_HOST_NETWORK = 'hostNetwork, with dnsPolicy ClusterFirstWithHostNet'
H_RUNTIME_CLASS = "the runtimeClassName of the operands and the RuntimeClass; must agree with the GPU nodes' `container_toolkit_runtime_name`"
H_CDI = ("CDI in the device plugin and MIG manager, the nvidia-cdi and nvidia-legacy RuntimeClasses; must agree with the GPU nodes' "
         '`container_toolkit_cdi_enabled` (deviation: cdi-default)')
H_MIG_STRATEGY = 'MIG_STRATEGY of the operands, the validator and the node labels'
H_DS_LABELS = 'labels of every DaemonSet and its Pods (not `app.kubernetes.io/managed-by`: see deviation: rollout)'
H_DS_ANNOTATIONS = 'annotations of every DaemonSet and its Pods'
H_DS_PRIORITY = 'priorityClassName of every operand Pod'
H_DS_TOLERATIONS = 'tolerations of every operand Pod'
H_DS_UPDATE = 'the updateStrategy of every DaemonSet'
H_DS_SECURITY = 'the securityContext of every operand Pod'
H_VALIDATOR_IMAGE = "NVIDIA's validator image: the validator DaemonSet, the Pods it starts and the operands' validation init containers"
H_VALIDATOR_PULL_SECRETS = "imagePullSecrets of the validator's Pods and of the operands with validation init containers"
H_VALIDATOR_RESOURCES = 'the resources of the validator containers and of the validation init containers'
H_VALIDATOR_ENV = "set in the validator's main container, as the Operator sets it (not in the component init containers)"
H_VALIDATOR_ARGS = "replace the args of the validator's main container, as the Operator does"
H_PLUGIN_CONFIG = 'the ConfigMap of device plugin configs that config-manager reads (time-slicing, MPS), with the chart\'s create and data'
H_PLUGIN_CONFIG_DEFAULT = 'the config of a node without the label nvidia.com/device-plugin.config'
H_MPS_ROOT = "the MPS control daemon's root on the host"
H_METRICS_CONFIG = "the ConfigMap with the exporter's metrics (`dcgm-metrics.csv`), with the chart's create and data"
H_EXPORTER_ANNOTATIONS = "annotations of the exporter's Pods"
H_EXPORTER_HOST_PID = "hostPID of the exporter's Pods"
H_EXPORTER_PODS = "Pod labels and UIDs in the metrics, with the exporter's ClusterRole that reads Pods"
H_EXPORTER_HPC = "the exporter's HPC job mapping directory, mounted from the host"
H_EXPORTER_SERVICE = "the exporter's Service"
H_EXPORTER_MONITOR = "the exporter's ServiceMonitor, created when the Prometheus Operator's CRD exists"
H_MIG_CONFIG = "the ConfigMap of MIG layouts the MIG manager applies (else the Operator's default-mig-parted-config), with the chart's create and data"
H_MIG_CONFIG_DEFAULT = 'the MIG layout of a MIG-capable node without the label nvidia.com/mig.config'
H_DRIVER_ENABLED = ('the default of `nvidia_driver_enabled` (role nvidia_driver): false validates a pre-installed driver and '
                    'installs none; the ClusterPolicy written says false (deviation: toolkit-on-host)')
H_DRIVER_VERSION = ("the default of `nvidia_driver_version`, the driver version the role installs; empty, or the Operator release's "
                    "default driver image tag (595.91.07), installs the distribution's driver")
H_DRIVER_KERNEL_MODULE_TYPE = 'the default of `nvidia_driver_kernel_module_type` (auto, open or proprietary; another value is refused)'
H_RDMA = ('the default of `nvidia_driver_rdma` (role nvidia_driver, module gpudirect): nvidia_peermem loaded on the host, listed in '
          'modules-load.d, its version checked against the driver, nvidia-peermem-ready written')
H_RDMA_HOST_MOFED = ('the default of `nvidia_driver_rdma_use_host_mofed`: the RDMA core (ib_core) must be loaded on the host, else the run '
                     "fails; without, nvidia_peermem waits for the Network Operator's MOFED driver")
H_GDS = ("the default of `nvidia_driver_gds` (module gpudirect): the nvidia-fs package from the node's repository, held, nvidia_fs "
         'loaded and checked (device nodes), nvidia-fs-ready written')
H_GDRCOPY = ("the default of `nvidia_driver_gdrcopy` (module gpudirect): gdrdrv-dkms (apt) or gdrcopy-kmod (dnf) from the node's "
             'repository, held, gdrdrv loaded and checked (/dev/gdrdrv), gdrcopy-ready written')
H_UPGRADE_POLICY = ("the default of `gpu_driver_upgrade_policy` (playbooks/upgrade.yml), with the Operator's steps and defaults "
                    '(docs/upgrade.md)')
H_TOOLKIT_ENABLED = ('the default of `container_toolkit_enabled` (role container_toolkit): false leaves a pre-installed toolkit '
                     'alone; the ClusterPolicy written says false (deviation: toolkit-on-host)')
H_TOOLKIT_INSTALL_DIR = ("the default of `container_toolkit_install_dir`: another directory than the Operator's /usr/local/nvidia "
                         "says the runtime is in <installDir>/toolkit, as the Operator's toolkit container lays it out")
H_TOOLKIT_ENV = ('CONTAINERD_CONFIG and CONTAINERD_SET_AS_DEFAULT are the defaults of `container_toolkit_containerd_config` and '
                 '`container_toolkit_set_as_default`; CONTAINERD_RUNTIME_CLASS yields to operator.runtimeClass, as in the Operator; '
                 'CONTAINERD_SOCKET is not needed (the role restarts containerd); another name is refused')
H_HOST_PATHS = ("as the Operator applies them to every operand: the host's root, the driver's root and the kubelet's directory "
                "the Pods mount (an absolute path; empty is the default)")
H_PSA = 'true labels the operator namespace Pod Security privileged, as the Operator does; false labels it too (deviation: psa)'
H_VALIDATOR_COMPONENT_ENV = ("merged last into that component's validation init container (driver and toolkit also into the operands' "
                             "driver-/toolkit-validation init containers), as the Operator does")
H_GPU_CLIENTS = 'the ConfigMap of the host GPU clients the MIG manager stops around a change (else default-gpu-clients)'
H_SANDBOX_WORKLOADS = ("deploys the sandbox operands (the vGPU device manager, the sandbox validator, the VFIO manager, the sandbox device "
                       "plugins, the CC manager) and "
                       "gives each GPU node the deploy labels of its workload (Node label `nvidia.com/gpu.workload.config`), as the Operator does")
H_DEFAULT_WORKLOAD = 'the workload of a GPU node without a valid `nvidia.com/gpu.workload.config` label (container, vm-passthrough or vm-vgpu)'
H_SANDBOX_MODE = ("kubevirt deploys KubeVirt's sandbox device plugin, kata Kata's and the CC manager; another value is refused (the CRD's "
                  "values)")
H_SANDBOX_ENABLED = 'with `sandboxWorkloads.enabled`, deploys the operand, or removes what this collection deployed of it'
H_KATA_DEVICE_PLUGIN_ENABLED = 'with `sandboxWorkloads.enabled` and mode kata, deploys the operand, or removes what this collection deployed of it'
H_VGPU_CONFIG = 'the ConfigMap of vGPU device configs the vGPU device manager reads (else the Operator\'s default-vgpu-devices-config)'
H_VGPU_CONFIG_DEFAULT = 'the vGPU device config of a vm-vgpu node without the label nvidia.com/vgpu.config (DEFAULT_VGPU_CONFIG)'
H_SANDBOX_DEVICE_PLUGIN_ENABLED = 'with `sandboxWorkloads.enabled` and mode kubevirt, deploys the operand, or removes what this collection deployed of it'
H_CC_MANAGER_ENABLED = ('with `sandboxWorkloads.enabled` and mode kata, deploys the operand, or removes what this collection deployed of it; '
                        "the sandbox validator's cc-manager init container follows it")
H_CC_DEFAULT_MODE = "DEFAULT_CC_MODE of the CC manager (the GPUs' confidential computing mode of a node without `nvidia.com/cc.mode`)"
H_ARGS_REPLACED = "replace its program's args, as the Operator does"
H_DRIVER_MANAGER = 'the k8s-driver-manager init container (image, pull policy and secrets, env), as the Operator sets it'
H_SANDBOX_VALIDATOR_ENV = ("merged last into the sandbox validator's init container of that component, after DEFAULT_GPU_WORKLOAD_CONFIG, "
                           'as the Operator does')

# --- not applicable: why ------------------------------------------------------------------------
N_OPERATOR = "the Operator's own Deployment and metrics: no Operator runs here (deviation: no-reconciler)"
N_INIT_CONTAINER = 'deprecated in the Operator; no operand here has that init container'
N_DEFAULT_RUNTIME = "deprecated in the Operator, which detects the runtime; here each node's is detected (`container_toolkit_runtime: auto`)"
N_OPENSHIFT = 'OpenShift only (deviation: openshift)'
N_CDI_DEFAULT = 'deprecated, without effect in the Operator: `cdi.enabled` makes CDI the default'
N_PSP = 'PodSecurityPolicy: deprecated in the Operator, gone from Kubernetes since 1.25'
N_VGPU_MANAGER = ("the vGPU manager container (NVIDIA's licensed vGPU host driver): not deployed; install the vGPU manager on the "
                  'vm-vgpu hosts, as with the Operator\'s `vgpuManager.enabled: false` (deviation: vgpu-manager-on-host)')
N_KATA_MANAGER = 'deprecated: the Operator v26.7.0 never deploys the Kata manager'
N_DCGM_HOST_PORT = 'deprecated in the Operator, whose hostengine Pod no longer publishes a host port'
N_GDS_ONLY = "the GPUDirect Storage driver container's: nvidia-fs comes from the node's package repository (module gpudirect)"
N_GDRCOPY_ONLY = "the GDRCopy driver container's: gdrdrv comes from the node's package repository (module gpudirect)"
N_DRIVER_CONTAINER = "the driver container's: the driver is installed on the host by role nvidia_driver (deviation: toolkit-on-host)"
N_DRIVER_MANAGER = "the k8s-driver-manager init container of the driver container's Pod: no driver container runs here (deviation: toolkit-on-host)"
N_DEPRECATED_LICENSING = 'deprecated in the Operator for `driver.licensingConfig.secretName`'
N_OPEN_KERNEL_MODULES = 'deprecated, without effect in the Operator: `driver.kernelModuleType` says it'
N_TOOLKIT_CONTAINER = "the toolkit container's: the container toolkit is set up on the host by role container_toolkit (deviation: toolkit-on-host)"

# --- refused: why -------------------------------------------------------------------------------
R_NRI = "the NRI plugin: the container toolkit here registers a runtime class; CDI through NRI is not set up"
R_DRIVER_ROLE = "set by role nvidia_driver's variables (`nvidia_driver_*`), not from the ClusterPolicy"
R_DRIVER_CRD = "NVIDIADriver custom resources are not read: role nvidia_driver installs the driver on each host"
R_VGPU_GUEST = "the vGPU guest driver's licensing and topology are not set up by role nvidia_driver"
R_DRIVER_REPO = ("the Operator mounts that ConfigMap's repository files into its driver container; role nvidia_driver installs from "
                 "the node's package sources: give the repository as `nvidia_driver_repository` (an APT source line) or "
                 "`nvidia_driver_yum_repository`")
R_TOOLKIT_VERSION = "the host's packages: pin their version in `container_toolkit_packages`"

FIELDS = {
    'ccManager.args': ('array', HONOURED, H_ARGS_REPLACED),
    'ccManager.defaultMode': ('string', HONOURED, H_CC_DEFAULT_MODE),
    'ccManager.enabled': ('boolean', HONOURED, H_CC_MANAGER_ENABLED),
    'ccManager.env[].name': ('string', HONOURED, H_ENV),
    'ccManager.env[].value': ('string', HONOURED, H_ENV),
    'ccManager.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'ccManager.image': ('string', HONOURED, H_IMAGE),
    'ccManager.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'ccManager.imagePullSecrets': ('array', HONOURED, H_PULL_SECRETS),
    'ccManager.repository': ('string', HONOURED, H_REPOSITORY),
    'ccManager.resources.limits': ('object', HONOURED, H_RESOURCES),
    'ccManager.resources.requests': ('object', HONOURED, H_RESOURCES),
    'ccManager.version': ('string', HONOURED, H_VERSION),
    'cdi.default': ('boolean', NOT_APPLICABLE, N_CDI_DEFAULT),
    'cdi.enabled': ('boolean', HONOURED, H_CDI),
    'cdi.nriPluginEnabled': ('boolean', REFUSED, R_NRI),
    'daemonsets.annotations': ('object', HONOURED, H_DS_ANNOTATIONS),
    'daemonsets.labels': ('object', HONOURED, H_DS_LABELS),
    'daemonsets.podSecurityContext.appArmorProfile.localhostProfile': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.appArmorProfile.type': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.fsGroup': ('integer', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.fsGroupChangePolicy': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.runAsGroup': ('integer', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.runAsNonRoot': ('boolean', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.runAsUser': ('integer', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.seLinuxChangePolicy': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.seLinuxOptions.level': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.seLinuxOptions.role': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.seLinuxOptions.type': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.seLinuxOptions.user': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.seccompProfile.localhostProfile': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.seccompProfile.type': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.supplementalGroups': ('array', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.supplementalGroupsPolicy': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.sysctls[].name': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.sysctls[].value': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.windowsOptions.gmsaCredentialSpec': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.windowsOptions.gmsaCredentialSpecName': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.windowsOptions.hostProcess': ('boolean', HONOURED, H_DS_SECURITY),
    'daemonsets.podSecurityContext.windowsOptions.runAsUserName': ('string', HONOURED, H_DS_SECURITY),
    'daemonsets.priorityClassName': ('string', HONOURED, H_DS_PRIORITY),
    'daemonsets.rollingUpdate.maxUnavailable': ('string', HONOURED, H_DS_UPDATE),
    'daemonsets.tolerations[].effect': ('string', HONOURED, H_DS_TOLERATIONS),
    'daemonsets.tolerations[].key': ('string', HONOURED, H_DS_TOLERATIONS),
    'daemonsets.tolerations[].operator': ('string', HONOURED, H_DS_TOLERATIONS),
    'daemonsets.tolerations[].tolerationSeconds': ('integer', HONOURED, H_DS_TOLERATIONS),
    'daemonsets.tolerations[].value': ('string', HONOURED, H_DS_TOLERATIONS),
    'daemonsets.updateStrategy': ('string', HONOURED, H_DS_UPDATE),
    'dcgm.args': ('array', HONOURED, H_ARGS),
    'dcgm.enabled': ('boolean', HONOURED, H_ENABLED),
    'dcgm.env[].name': ('string', HONOURED, H_ENV),
    'dcgm.env[].value': ('string', HONOURED, H_ENV),
    'dcgm.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'dcgm.hostPort': ('integer', NOT_APPLICABLE, N_DCGM_HOST_PORT),
    'dcgm.image': ('string', HONOURED, H_IMAGE),
    'dcgm.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'dcgm.imagePullSecrets': ('array', HONOURED, H_PULL_SECRETS),
    'dcgm.repository': ('string', HONOURED, H_REPOSITORY),
    'dcgm.resources.limits': ('object', HONOURED, H_RESOURCES),
    'dcgm.resources.requests': ('object', HONOURED, H_RESOURCES),
    'dcgm.version': ('string', HONOURED, H_VERSION),
    'dcgmExporter.annotations': ('object', HONOURED, H_EXPORTER_ANNOTATIONS),
    'dcgmExporter.args': ('array', HONOURED, H_ARGS),
    'dcgmExporter.config.name': ('string', HONOURED, H_METRICS_CONFIG),
    'dcgmExporter.enablePodLabels': ('boolean', HONOURED, H_EXPORTER_PODS),
    'dcgmExporter.enablePodUID': ('boolean', HONOURED, H_EXPORTER_PODS),
    'dcgmExporter.enabled': ('boolean', HONOURED, H_ENABLED),
    'dcgmExporter.env[].name': ('string', HONOURED, H_ENV),
    'dcgmExporter.env[].value': ('string', HONOURED, H_ENV),
    'dcgmExporter.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'dcgmExporter.hostPID': ('boolean', HONOURED, H_EXPORTER_HOST_PID),
    'dcgmExporter.hpcJobMapping.directory': ('string', HONOURED, H_EXPORTER_HPC),
    'dcgmExporter.hpcJobMapping.enabled': ('boolean', HONOURED, H_EXPORTER_HPC),
    'dcgmExporter.image': ('string', HONOURED, H_IMAGE),
    'dcgmExporter.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'dcgmExporter.imagePullSecrets': ('array', HONOURED, H_PULL_SECRETS),
    'dcgmExporter.podLabelAllowlistRegex': ('array', HONOURED, H_EXPORTER_PODS),
    'dcgmExporter.repository': ('string', HONOURED, H_REPOSITORY),
    'dcgmExporter.resources.limits': ('object', HONOURED, H_RESOURCES),
    'dcgmExporter.resources.requests': ('object', HONOURED, H_RESOURCES),
    'dcgmExporter.service.internalTrafficPolicy': ('string', HONOURED, H_EXPORTER_SERVICE),
    'dcgmExporter.service.type': ('string', HONOURED, H_EXPORTER_SERVICE),
    'dcgmExporter.serviceMonitor.additionalLabels': ('object', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.serviceMonitor.enabled': ('boolean', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.serviceMonitor.honorLabels': ('boolean', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.serviceMonitor.interval': ('string', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.serviceMonitor.relabelings[].action': ('string', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.serviceMonitor.relabelings[].modulus': ('integer', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.serviceMonitor.relabelings[].regex': ('string', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.serviceMonitor.relabelings[].replacement': ('string', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.serviceMonitor.relabelings[].separator': ('string', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.serviceMonitor.relabelings[].sourceLabels': ('array', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.serviceMonitor.relabelings[].targetLabel': ('string', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.serviceMonitor.scrapeTimeout': ('string', HONOURED, H_EXPORTER_MONITOR),
    'dcgmExporter.version': ('string', HONOURED, H_VERSION),
    'devicePlugin.args': ('array', HONOURED, H_ARGS),
    'devicePlugin.config.default': ('string', HONOURED, H_PLUGIN_CONFIG_DEFAULT),
    'devicePlugin.config.name': ('string', HONOURED, H_PLUGIN_CONFIG),
    'devicePlugin.enabled': ('boolean', HONOURED, H_ENABLED),
    'devicePlugin.env[].name': ('string', HONOURED, H_ENV),
    'devicePlugin.env[].value': ('string', HONOURED, H_ENV),
    'devicePlugin.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'devicePlugin.image': ('string', HONOURED, H_IMAGE),
    'devicePlugin.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'devicePlugin.imagePullSecrets': ('array', HONOURED, H_PULL_SECRETS),
    'devicePlugin.mps.root': ('string', HONOURED, H_MPS_ROOT),
    'devicePlugin.repository': ('string', HONOURED, H_REPOSITORY),
    'devicePlugin.resources.limits': ('object', HONOURED, H_RESOURCES),
    'devicePlugin.resources.requests': ('object', HONOURED, H_RESOURCES),
    'devicePlugin.version': ('string', HONOURED, H_VERSION),
    'driver.args': ('array', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.certConfig.name': ('string', REFUSED, R_DRIVER_ROLE),
    'driver.enabled': ('boolean', HONOURED, H_DRIVER_ENABLED),
    'driver.env[].name': ('string', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.env[].value': ('string', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.hostNetwork': ('boolean', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.image': ('string', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.imagePullPolicy': ('string', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.imagePullSecrets': ('array', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.kernelModuleConfig.name': ('string', REFUSED, R_DRIVER_ROLE),
    'driver.kernelModuleType': ('string', HONOURED, H_DRIVER_KERNEL_MODULE_TYPE),
    'driver.licensingConfig.configMapName': ('string', NOT_APPLICABLE, N_DEPRECATED_LICENSING),
    'driver.licensingConfig.nlsEnabled': ('boolean', REFUSED, R_VGPU_GUEST, (True,)),
    'driver.licensingConfig.secretName': ('string', REFUSED, R_VGPU_GUEST),
    'driver.livenessProbe.failureThreshold': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.livenessProbe.initialDelaySeconds': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.livenessProbe.periodSeconds': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.livenessProbe.successThreshold': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.livenessProbe.timeoutSeconds': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.manager.env[].name': ('string', NOT_APPLICABLE, N_DRIVER_MANAGER),
    'driver.manager.env[].value': ('string', NOT_APPLICABLE, N_DRIVER_MANAGER),
    'driver.manager.image': ('string', NOT_APPLICABLE, N_DRIVER_MANAGER),
    'driver.manager.imagePullPolicy': ('string', NOT_APPLICABLE, N_DRIVER_MANAGER),
    'driver.manager.imagePullSecrets': ('array', NOT_APPLICABLE, N_DRIVER_MANAGER),
    'driver.manager.repository': ('string', NOT_APPLICABLE, N_DRIVER_MANAGER),
    'driver.manager.version': ('string', NOT_APPLICABLE, N_DRIVER_MANAGER),
    'driver.rdma.enabled': ('boolean', HONOURED, H_RDMA),
    'driver.rdma.useHostMofed': ('boolean', HONOURED, H_RDMA_HOST_MOFED),
    'driver.readinessProbe.failureThreshold': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.readinessProbe.initialDelaySeconds': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.readinessProbe.periodSeconds': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.readinessProbe.successThreshold': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.readinessProbe.timeoutSeconds': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.repoConfig.configMapName': ('string', REFUSED, R_DRIVER_REPO),
    'driver.repository': ('string', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.resources.limits': ('object', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.resources.requests': ('object', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.secretEnv': ('string', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.startupProbe.failureThreshold': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.startupProbe.initialDelaySeconds': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.startupProbe.periodSeconds': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.startupProbe.successThreshold': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.startupProbe.timeoutSeconds': ('integer', NOT_APPLICABLE, N_DRIVER_CONTAINER),
    'driver.upgradePolicy.autoUpgrade': ('boolean', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.drain.deleteEmptyDir': ('boolean', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.drain.enable': ('boolean', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.drain.force': ('boolean', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.drain.podSelector': ('string', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.drain.timeoutSeconds': ('integer', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.maxParallelUpgrades': ('integer', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.maxUnavailable': ('int-or-string', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.podDeletion.deleteEmptyDir': ('boolean', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.podDeletion.force': ('boolean', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.podDeletion.timeoutSeconds': ('integer', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.waitForCompletion.podSelector': ('string', HONOURED, H_UPGRADE_POLICY),
    'driver.upgradePolicy.waitForCompletion.timeoutSeconds': ('integer', HONOURED, H_UPGRADE_POLICY),
    'driver.useNvidiaDriverCRD': ('boolean', REFUSED, R_DRIVER_CRD),
    'driver.useOpenKernelModules': ('boolean', NOT_APPLICABLE, N_OPEN_KERNEL_MODULES),
    'driver.usePrecompiled': ('boolean', REFUSED, R_DRIVER_ROLE),
    'driver.version': ('string', HONOURED, H_DRIVER_VERSION),
    'driver.virtualTopology.config': ('string', REFUSED, R_VGPU_GUEST),
    'gdrcopy.args': ('array', NOT_APPLICABLE, N_GDRCOPY_ONLY),
    'gdrcopy.enabled': ('boolean', HONOURED, H_GDRCOPY),
    'gdrcopy.env[].name': ('string', NOT_APPLICABLE, N_GDRCOPY_ONLY),
    'gdrcopy.env[].value': ('string', NOT_APPLICABLE, N_GDRCOPY_ONLY),
    'gdrcopy.image': ('string', NOT_APPLICABLE, N_GDRCOPY_ONLY),
    'gdrcopy.imagePullPolicy': ('string', NOT_APPLICABLE, N_GDRCOPY_ONLY),
    'gdrcopy.imagePullSecrets': ('array', NOT_APPLICABLE, N_GDRCOPY_ONLY),
    'gdrcopy.repository': ('string', NOT_APPLICABLE, N_GDRCOPY_ONLY),
    'gdrcopy.version': ('string', NOT_APPLICABLE, N_GDRCOPY_ONLY),
    'gds.args': ('array', NOT_APPLICABLE, N_GDS_ONLY),
    'gds.enabled': ('boolean', HONOURED, H_GDS),
    'gds.env[].name': ('string', NOT_APPLICABLE, N_GDS_ONLY),
    'gds.env[].value': ('string', NOT_APPLICABLE, N_GDS_ONLY),
    'gds.image': ('string', NOT_APPLICABLE, N_GDS_ONLY),
    'gds.imagePullPolicy': ('string', NOT_APPLICABLE, N_GDS_ONLY),
    'gds.imagePullSecrets': ('array', NOT_APPLICABLE, N_GDS_ONLY),
    'gds.repository': ('string', NOT_APPLICABLE, N_GDS_ONLY),
    'gds.version': ('string', NOT_APPLICABLE, N_GDS_ONLY),
    'gfd.args': ('array', HONOURED, H_ARGS),
    'gfd.enabled': ('boolean', HONOURED, H_ENABLED),
    'gfd.env[].name': ('string', HONOURED, H_ENV),
    'gfd.env[].value': ('string', HONOURED, H_ENV),
    'gfd.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'gfd.image': ('string', HONOURED, H_IMAGE),
    'gfd.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'gfd.imagePullSecrets': ('array', HONOURED, H_PULL_SECRETS),
    'gfd.repository': ('string', HONOURED, H_REPOSITORY),
    'gfd.resources.limits': ('object', HONOURED, H_RESOURCES),
    'gfd.resources.requests': ('object', HONOURED, H_RESOURCES),
    'gfd.version': ('string', HONOURED, H_VERSION),
    'hostPaths.driverInstallDir': ('string', HONOURED, H_HOST_PATHS),
    'hostPaths.kubeletRootDir': ('string', HONOURED, H_HOST_PATHS),
    'hostPaths.rootFS': ('string', HONOURED, H_HOST_PATHS),
    'kataManager.args': ('array', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.config.artifactsDir': ('string', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.config.runtimeClasses[].artifacts.pullSecret': ('string', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.config.runtimeClasses[].artifacts.url': ('string', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.config.runtimeClasses[].name': ('string', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.config.runtimeClasses[].nodeSelector': ('object', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.enabled': ('boolean', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.env[].name': ('string', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.env[].value': ('string', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.hostNetwork': ('boolean', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.image': ('string', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.imagePullPolicy': ('string', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.imagePullSecrets': ('array', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.repository': ('string', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.resources.limits': ('object', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.resources.requests': ('object', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataManager.version': ('string', NOT_APPLICABLE, N_KATA_MANAGER),
    'kataSandboxDevicePlugin.args': ('array', HONOURED, H_ARGS),
    'kataSandboxDevicePlugin.enabled': ('boolean', HONOURED, H_KATA_DEVICE_PLUGIN_ENABLED),
    'kataSandboxDevicePlugin.env[].name': ('string', HONOURED, H_ENV),
    'kataSandboxDevicePlugin.env[].value': ('string', HONOURED, H_ENV),
    'kataSandboxDevicePlugin.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'kataSandboxDevicePlugin.image': ('string', HONOURED, H_IMAGE),
    'kataSandboxDevicePlugin.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'kataSandboxDevicePlugin.imagePullSecrets': ('array', HONOURED, H_PULL_SECRETS),
    'kataSandboxDevicePlugin.repository': ('string', HONOURED, H_REPOSITORY),
    'kataSandboxDevicePlugin.resources.limits': ('object', HONOURED, H_RESOURCES),
    'kataSandboxDevicePlugin.resources.requests': ('object', HONOURED, H_RESOURCES),
    'kataSandboxDevicePlugin.version': ('string', HONOURED, H_VERSION),
    'mig.strategy': ('string', HONOURED, H_MIG_STRATEGY),
    'migManager.args': ('array', HONOURED, H_ARGS),
    'migManager.config.default': ('string', HONOURED, H_MIG_CONFIG_DEFAULT),
    'migManager.config.name': ('string', HONOURED, H_MIG_CONFIG),
    'migManager.enabled': ('boolean', HONOURED, H_ENABLED),
    'migManager.env[].name': ('string', HONOURED, H_ENV),
    'migManager.env[].value': ('string', HONOURED, H_ENV),
    'migManager.gpuClientsConfig.name': ('string', HONOURED, H_GPU_CLIENTS),
    'migManager.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'migManager.image': ('string', HONOURED, H_IMAGE),
    'migManager.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'migManager.imagePullSecrets': ('array', HONOURED, H_PULL_SECRETS),
    'migManager.repository': ('string', HONOURED, H_REPOSITORY),
    'migManager.resources.limits': ('object', HONOURED, H_RESOURCES),
    'migManager.resources.requests': ('object', HONOURED, H_RESOURCES),
    'migManager.version': ('string', HONOURED, H_VERSION),
    'nodeStatusExporter.args': ('array', HONOURED, H_ARGS),
    'nodeStatusExporter.enabled': ('boolean', HONOURED, H_ENABLED),
    'nodeStatusExporter.env[].name': ('string', HONOURED, H_ENV),
    'nodeStatusExporter.env[].value': ('string', HONOURED, H_ENV),
    'nodeStatusExporter.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'nodeStatusExporter.image': ('string', HONOURED, H_IMAGE),
    'nodeStatusExporter.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'nodeStatusExporter.imagePullSecrets': ('array', HONOURED, H_PULL_SECRETS),
    'nodeStatusExporter.repository': ('string', HONOURED, H_REPOSITORY),
    'nodeStatusExporter.resources.limits': ('object', HONOURED, H_RESOURCES),
    'nodeStatusExporter.resources.requests': ('object', HONOURED, H_RESOURCES),
    'nodeStatusExporter.version': ('string', HONOURED, H_VERSION),
    'operator.annotations': ('object', NOT_APPLICABLE, N_OPERATOR),
    'operator.defaultRuntime': ('string', NOT_APPLICABLE, N_DEFAULT_RUNTIME),
    'operator.initContainer.image': ('string', NOT_APPLICABLE, N_INIT_CONTAINER),
    'operator.initContainer.imagePullPolicy': ('string', NOT_APPLICABLE, N_INIT_CONTAINER),
    'operator.initContainer.imagePullSecrets': ('array', NOT_APPLICABLE, N_INIT_CONTAINER),
    'operator.initContainer.repository': ('string', NOT_APPLICABLE, N_INIT_CONTAINER),
    'operator.initContainer.version': ('string', NOT_APPLICABLE, N_INIT_CONTAINER),
    'operator.labels': ('object', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.additionalLabels': ('object', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.enabled': ('boolean', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.honorLabels': ('boolean', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.interval': ('string', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.relabelings[].action': ('string', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.relabelings[].modulus': ('integer', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.relabelings[].regex': ('string', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.relabelings[].replacement': ('string', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.relabelings[].separator': ('string', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.relabelings[].sourceLabels': ('array', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.relabelings[].targetLabel': ('string', NOT_APPLICABLE, N_OPERATOR),
    'operator.metrics.serviceMonitor.scrapeTimeout': ('string', NOT_APPLICABLE, N_OPERATOR),
    'operator.runtimeClass': ('string', HONOURED, H_RUNTIME_CLASS),
    'operator.use_ocp_driver_toolkit': ('boolean', NOT_APPLICABLE, N_OPENSHIFT),
    'psa.enabled': ('boolean', HONOURED, H_PSA),
    'psp.enabled': ('boolean', NOT_APPLICABLE, N_PSP),
    'sandboxDevicePlugin.args': ('array', HONOURED, H_ARGS),
    'sandboxDevicePlugin.enabled': ('boolean', HONOURED, H_SANDBOX_DEVICE_PLUGIN_ENABLED),
    'sandboxDevicePlugin.env[].name': ('string', HONOURED, H_ENV),
    'sandboxDevicePlugin.env[].value': ('string', HONOURED, H_ENV),
    'sandboxDevicePlugin.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'sandboxDevicePlugin.image': ('string', HONOURED, H_IMAGE),
    'sandboxDevicePlugin.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'sandboxDevicePlugin.imagePullSecrets': ('array', HONOURED, H_PULL_SECRETS),
    'sandboxDevicePlugin.repository': ('string', HONOURED, H_REPOSITORY),
    'sandboxDevicePlugin.resources.limits': ('object', HONOURED, H_RESOURCES),
    'sandboxDevicePlugin.resources.requests': ('object', HONOURED, H_RESOURCES),
    'sandboxDevicePlugin.version': ('string', HONOURED, H_VERSION),
    'sandboxWorkloads.defaultWorkload': ('string', HONOURED, H_DEFAULT_WORKLOAD),
    'sandboxWorkloads.enabled': ('boolean', HONOURED, H_SANDBOX_WORKLOADS),
    'sandboxWorkloads.mode': ('string', HONOURED, H_SANDBOX_MODE),
    'toolkit.args': ('array', NOT_APPLICABLE, N_TOOLKIT_CONTAINER),
    'toolkit.enabled': ('boolean', HONOURED, H_TOOLKIT_ENABLED),
    'toolkit.env[].name': ('string', HONOURED, H_TOOLKIT_ENV),
    'toolkit.env[].value': ('string', HONOURED, H_TOOLKIT_ENV),
    'toolkit.hostNetwork': ('boolean', NOT_APPLICABLE, N_TOOLKIT_CONTAINER),
    'toolkit.image': ('string', NOT_APPLICABLE, N_TOOLKIT_CONTAINER),
    'toolkit.imagePullPolicy': ('string', NOT_APPLICABLE, N_TOOLKIT_CONTAINER),
    'toolkit.imagePullSecrets': ('array', NOT_APPLICABLE, N_TOOLKIT_CONTAINER),
    'toolkit.installDir': ('string', HONOURED, H_TOOLKIT_INSTALL_DIR),
    'toolkit.repository': ('string', NOT_APPLICABLE, N_TOOLKIT_CONTAINER),
    'toolkit.resources.limits': ('object', NOT_APPLICABLE, N_TOOLKIT_CONTAINER),
    'toolkit.resources.requests': ('object', NOT_APPLICABLE, N_TOOLKIT_CONTAINER),
    'toolkit.version': ('string', REFUSED, R_TOOLKIT_VERSION, ('v1.20.0',)),
    'validator.args': ('array', HONOURED, H_VALIDATOR_ARGS),
    'validator.cuda.env[].name': ('string', HONOURED, H_VALIDATOR_COMPONENT_ENV),
    'validator.cuda.env[].value': ('string', HONOURED, H_VALIDATOR_COMPONENT_ENV),
    'validator.driver.env[].name': ('string', HONOURED, H_VALIDATOR_COMPONENT_ENV),
    'validator.driver.env[].value': ('string', HONOURED, H_VALIDATOR_COMPONENT_ENV),
    'validator.env[].name': ('string', HONOURED, H_VALIDATOR_ENV),
    'validator.env[].value': ('string', HONOURED, H_VALIDATOR_ENV),
    'validator.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'validator.image': ('string', HONOURED, H_VALIDATOR_IMAGE),
    'validator.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'validator.imagePullSecrets': ('array', HONOURED, H_VALIDATOR_PULL_SECRETS),
    'validator.plugin.env[].name': ('string', HONOURED, H_VALIDATOR_COMPONENT_ENV),
    'validator.plugin.env[].value': ('string', HONOURED, H_VALIDATOR_COMPONENT_ENV),
    'validator.repository': ('string', HONOURED, H_VALIDATOR_IMAGE),
    'validator.resources.limits': ('object', HONOURED, H_VALIDATOR_RESOURCES),
    'validator.resources.requests': ('object', HONOURED, H_VALIDATOR_RESOURCES),
    'validator.toolkit.env[].name': ('string', HONOURED, H_VALIDATOR_COMPONENT_ENV),
    'validator.toolkit.env[].value': ('string', HONOURED, H_VALIDATOR_COMPONENT_ENV),
    'validator.version': ('string', HONOURED, H_VALIDATOR_IMAGE),
    'validator.vfioPCI.env[].name': ('string', HONOURED, H_SANDBOX_VALIDATOR_ENV),
    'validator.vfioPCI.env[].value': ('string', HONOURED, H_SANDBOX_VALIDATOR_ENV),
    'validator.vgpuDevices.env[].name': ('string', HONOURED, H_SANDBOX_VALIDATOR_ENV),
    'validator.vgpuDevices.env[].value': ('string', HONOURED, H_SANDBOX_VALIDATOR_ENV),
    'validator.vgpuManager.env[].name': ('string', HONOURED, H_SANDBOX_VALIDATOR_ENV),
    'validator.vgpuManager.env[].value': ('string', HONOURED, H_SANDBOX_VALIDATOR_ENV),
    'vfioManager.args': ('array', HONOURED, H_ARGS_REPLACED),
    'vfioManager.driverManager.env[].name': ('string', HONOURED, H_DRIVER_MANAGER),
    'vfioManager.driverManager.env[].value': ('string', HONOURED, H_DRIVER_MANAGER),
    'vfioManager.driverManager.image': ('string', HONOURED, H_DRIVER_MANAGER),
    'vfioManager.driverManager.imagePullPolicy': ('string', HONOURED, H_DRIVER_MANAGER),
    'vfioManager.driverManager.imagePullSecrets': ('array', HONOURED, H_DRIVER_MANAGER),
    'vfioManager.driverManager.repository': ('string', HONOURED, H_DRIVER_MANAGER),
    'vfioManager.driverManager.version': ('string', HONOURED, H_DRIVER_MANAGER),
    'vfioManager.enabled': ('boolean', HONOURED, H_SANDBOX_ENABLED),
    'vfioManager.env[].name': ('string', HONOURED, H_ENV),
    'vfioManager.env[].value': ('string', HONOURED, H_ENV),
    'vfioManager.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'vfioManager.image': ('string', HONOURED, H_IMAGE),
    'vfioManager.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'vfioManager.imagePullSecrets': ('array', HONOURED, H_PULL_SECRETS),
    'vfioManager.repository': ('string', HONOURED, H_REPOSITORY),
    'vfioManager.resources.limits': ('object', HONOURED, H_RESOURCES),
    'vfioManager.resources.requests': ('object', HONOURED, H_RESOURCES),
    'vfioManager.version': ('string', HONOURED, H_VERSION),
    'vgpuDeviceManager.args': ('array', HONOURED, H_ARGS_REPLACED),
    'vgpuDeviceManager.config.default': ('string', HONOURED, H_VGPU_CONFIG_DEFAULT),
    'vgpuDeviceManager.config.name': ('string', HONOURED, H_VGPU_CONFIG),
    'vgpuDeviceManager.enabled': ('boolean', HONOURED, H_SANDBOX_ENABLED),
    'vgpuDeviceManager.env[].name': ('string', HONOURED, H_ENV),
    'vgpuDeviceManager.env[].value': ('string', HONOURED, H_ENV),
    'vgpuDeviceManager.hostNetwork': ('boolean', HONOURED, H_HOST_NETWORK),
    'vgpuDeviceManager.image': ('string', HONOURED, H_IMAGE),
    'vgpuDeviceManager.imagePullPolicy': ('string', HONOURED, H_PULL_POLICY),
    'vgpuDeviceManager.imagePullSecrets': ('array', HONOURED, H_PULL_SECRETS),
    'vgpuDeviceManager.repository': ('string', HONOURED, H_REPOSITORY),
    'vgpuDeviceManager.resources.limits': ('object', HONOURED, H_RESOURCES),
    'vgpuDeviceManager.resources.requests': ('object', HONOURED, H_RESOURCES),
    'vgpuDeviceManager.version': ('string', HONOURED, H_VERSION),
    'vgpuManager.args': ('array', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.driverManager.env[].name': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.driverManager.env[].value': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.driverManager.image': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.driverManager.imagePullPolicy': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.driverManager.imagePullSecrets': ('array', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.driverManager.repository': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.driverManager.version': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.enabled': ('boolean', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.env[].name': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.env[].value': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.hostNetwork': ('boolean', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.image': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.imagePullPolicy': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.imagePullSecrets': ('array', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.kernelModuleConfig.name': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.repository': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.resources.limits': ('object', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.resources.requests': ('object', NOT_APPLICABLE, N_VGPU_MANAGER),
    'vgpuManager.version': ('string', NOT_APPLICABLE, N_VGPU_MANAGER),
}

# The Helm chart's values that are not ClusterPolicy fields (its templates/clusterpolicy.yaml does not write them), by values
# path, a row covers what is under it: (status, why). The chart's config `create` and `data` are SPEC_EXTRAS, below.
C_OPERATOR = "the Operator's Deployment and the chart's CRD jobs: no Operator runs here (deviation: no-reconciler)"
C_NFD = ("NFD as the chart installs it (its node-feature-discovery subchart, role gpu_cluster_base); `gpu_operator_nfd` is laid "
         "over it")
C_NFD_CHART = "the subchart's values: the gpu-operator chart's own are used, the images follow `gpu_operator_registry` (deviation: nfd-chart)"
C_DRIVER_CRD = 'the NVIDIADriver custom resource of `driver.nvidiaDriverCRD.enabled`, which is refused (as `driver.useNvidiaDriverCRD`)'
CHART_FIELDS = {
    'clusterPolicy.deployCR': (REFUSED, 'when false: the chart would deploy no ClusterPolicy, and this collection deploys what one says'),
    'devicePlugin.mps.root': (NOT_APPLICABLE, 'the chart does not write it into the ClusterPolicy (the Operator uses /run/nvidia/mps); '
                                              'set `gpu_operator_policy.devicePlugin.mps.root`'),
    'draDriver': (NOT_APPLICABLE, 'the DRA driver of `gpuCluster.deployCR`, which is refused'),
    'driver.nvidiaDriverCRD.deployDefaultCR': (NOT_APPLICABLE, C_DRIVER_CRD),
    'driver.nvidiaDriverCRD.driverType': (NOT_APPLICABLE, C_DRIVER_CRD),
    'driver.nvidiaDriverCRD.nodeSelector': (NOT_APPLICABLE, C_DRIVER_CRD),
    'extraObjects': (REFUSED, 'when not empty: apply your own objects with kubernetes.core.k8s in your playbook'),
    'gpuCluster.deployCR': (REFUSED, 'when true: the GPUCluster (DRA driver) stack is not deployed by this collection'),
    'nfd.enabled': (HONOURED, C_NFD),
    'nfd.nodefeaturerules': (HONOURED, C_NFD),
    'node-feature-discovery': (NOT_APPLICABLE, C_NFD_CHART),
    'operator.affinity': (NOT_APPLICABLE, C_OPERATOR),
    'operator.annotations': (NOT_APPLICABLE, C_OPERATOR),
    'operator.cleanupCRD': (NOT_APPLICABLE, C_OPERATOR),
    'operator.defaultGPUMode': (NOT_APPLICABLE, 'written by the chart, but no field of the v26.7.0 CRD: the API server drops it'),
    'operator.defaultRuntime': (NOT_APPLICABLE, "not read by the chart of v26.7.0; each node's runtime is detected (`container_toolkit_runtime: auto`)"),
    'operator.env': (NOT_APPLICABLE, C_OPERATOR),
    'operator.image': (NOT_APPLICABLE, C_OPERATOR),
    'operator.imagePullPolicy': (NOT_APPLICABLE, C_OPERATOR),
    'operator.imagePullSecrets': (NOT_APPLICABLE, C_OPERATOR),
    'operator.labels': (NOT_APPLICABLE, C_OPERATOR),
    'operator.logging': (NOT_APPLICABLE, C_OPERATOR),
    'operator.nodeSelector': (NOT_APPLICABLE, C_OPERATOR),
    'operator.priorityClassName': (NOT_APPLICABLE, C_OPERATOR),
    'operator.repository': (NOT_APPLICABLE, C_OPERATOR),
    'operator.resources': (NOT_APPLICABLE, C_OPERATOR),
    'operator.tolerations': (NOT_APPLICABLE, C_OPERATOR),
    'operator.upgradeCRD': (NOT_APPLICABLE, C_OPERATOR),
    'operator.version': (NOT_APPLICABLE, C_OPERATOR),
    'platform.openshift': (REFUSED, 'when true: OpenShift is not a target (deviation: openshift)'),
}

# Fields of the chart's values that the ClusterPolicy sections here take as well (their ConfigMaps): honoured.
H_CONFIG_CREATE = 'create the ConfigMap the section names, as the chart does (true with data, false without)'
H_PLUGIN_CONFIG_DATA = 'the device plugin configs of the ConfigMap, one per key (a mapping or YAML text), checked as device plugin v0.20.0 checks them'
H_METRICS_CONFIG_DATA = 'the CSV of the metrics, the ConfigMap\'s `dcgm-metrics.csv`'
H_MIG_CONFIG_DATA = 'the ConfigMap\'s `config.yaml`: the MIG layouts, checked before anything is applied'
SPEC_EXTRAS = {
    'dcgmExporter.config.create': ('boolean', HONOURED, H_CONFIG_CREATE),
    'dcgmExporter.config.data': ('string', HONOURED, H_METRICS_CONFIG_DATA),
    'devicePlugin.config.create': ('boolean', HONOURED, H_CONFIG_CREATE),
    'devicePlugin.config.data': ('object', HONOURED, H_PLUGIN_CONFIG_DATA),
    'migManager.config.create': ('boolean', HONOURED, H_CONFIG_CREATE),
    'migManager.config.data': ('object', HONOURED, H_MIG_CONFIG_DATA),
}
