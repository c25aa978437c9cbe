from optimum.neuron import NeuronModelForCausalLM


class CompiledLM(NeuronModelForCausalLM):
    """A model compiled for AWS Neuron, which runs outside autograd."""
