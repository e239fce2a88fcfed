# The step image: what the compiled workflow's own steps run (`nvcre-step discover|run|judge|cleanup`).
# Workload images (nccl-tests, DCGM, PyTorch/Megatron) come from the catalog, not from here.
FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 NVCRE_CATALOG_DIR=/opt/nvcre-hera/catalog
WORKDIR /opt/nvcre-hera
COPY pyproject.toml README.md ./
COPY nvcre_hera ./nvcre_hera
COPY catalog ./catalog
RUN pip install --no-cache-dir . && useradd --uid 65532 --no-create-home nvcre
USER 65532
ENTRYPOINT ["nvcre-step"]
