"""Checks the Kubernetes manifests in deploy/k8s (run by scripts/check-deploy.sh, part of `make test`).

Every file must parse as YAML. Beyond syntax, the checks catch the mistakes that would only show in a
cluster: each executable has a Deployment, a Service and a PodDisruptionBudget of the same name; containers
have readiness and liveness probes on the admin port, resource requests, and drop privileges; every
ConfigMap a pod reads exists; the kustomization lists every file.
"""

import pathlib
import sys

import yaml


def fail(message):
    print(f"check-manifests: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    directory = pathlib.Path(sys.argv[1])
    services = sys.argv[2:]
    documents = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            loaded = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
        except yaml.YAMLError as error:
            fail(f"{path}: {error}")
        documents.extend((path.name, doc) for doc in loaded)

    by_kind = {}
    for name, doc in documents:
        for field in ("apiVersion", "kind"):
            if field not in doc:
                fail(f"{name}: a document without {field}")
        metadata_name = doc.get("metadata", {}).get("name", "")
        by_kind.setdefault(doc["kind"], {})[metadata_name] = (name, doc)

    config_maps = set(by_kind.get("ConfigMap", {}))
    for service in services:
        for kind in ("Deployment", "Service", "PodDisruptionBudget"):
            if service not in by_kind.get(kind, {}):
                fail(f"{service}: no {kind}")
        file_name, deployment = by_kind["Deployment"][service]
        check_deployment(file_name, service, deployment, config_maps)
        selector = by_kind["Service"][service][1]["spec"]["selector"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        if any(labels.get(key) != value for key, value in selector.items()):
            fail(f"{service}: the Service's selector does not match the pods' labels")

    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    listed = set(kustomization.get("resources", []))
    present = {path.name for path in directory.glob("*.yaml")} - {"kustomization.yaml"}
    if listed != present:
        fail(f"kustomization resources {sorted(listed)} differ from the files {sorted(present)}")
    print(f"check-manifests: {len(documents)} documents in {len(present) + 1} files hold together")


def check_deployment(file_name, service, deployment, config_maps):
    spec = deployment["spec"]["template"]["spec"]
    if not spec.get("securityContext", {}).get("runAsNonRoot"):
        fail(f"{file_name}: {service} pods may run as root")
    containers = spec.get("containers", []) + spec.get("initContainers", [])
    for container in containers:
        where = f"{file_name}: container {container['name']}"
        context = container.get("securityContext", {})
        if context.get("allowPrivilegeEscalation") is not False or "ALL" not in context.get("capabilities", {}).get(
            "drop", []
        ):
            fail(f"{where} keeps privileges")
        for source in container.get("envFrom", []):
            reference = source.get("configMapRef")
            if reference and reference["name"] not in config_maps:
                fail(f"{where} reads the missing ConfigMap {reference['name']}")
    main_container = spec["containers"][0]
    ports = {port["name"]: port["containerPort"] for port in main_container.get("ports", [])}
    if "admin" not in ports or "rpc" not in ports:
        fail(f"{file_name}: {service} does not name its rpc and admin ports")
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        http = main_container.get(probe, {}).get("httpGet", {})
        if http.get("path") != path or http.get("port") != "admin":
            fail(f"{file_name}: {service} {probe} must GET {path} on the admin port")
    requests = main_container.get("resources", {}).get("requests", {})
    if "cpu" not in requests or "memory" not in requests:
        fail(f"{file_name}: {service} has no cpu and memory requests")


if __name__ == "__main__":
    main()
