"""The probe model and the executors that run probes on real replicas (FaultSense §4.1).

encoding      GPU set <-> routed experts <-> probe embeddings (linear EP placement)
model         the one-layer OLMoE probe model (``slim`` / ``paper``)
memory        its weights per GPU under n-way expert parallelism
tokenizer     a minimal offline tokenizer for the checkpoint
checkpoint    write / read the Hugging Face checkpoint folder
reference     transformers forward: routing and next-token logprobs of a probe
vllm_server   start / stop a vLLM server for the checkpoint
executors/    local (torch.distributed), ray, vllm (HTTP) probe executors
"""
