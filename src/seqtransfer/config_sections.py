"""The sections of a run configuration: one dataclass per section (data, model, train, transfer,
multitask) and :class:`RunConfig`, which holds them all, with every setting's default.

``seqtransfer.config`` reads, checks and writes them, and imports them back so that callers can
import them from there; a module that ``seqtransfer.config`` itself loads (learning_rate_schedules.py,
through ``config_values.schedule_names``) imports them from here, making no circle.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field


class Section:
    """A configuration section that can be frozen once the run's settings are resolved
    (``RunConfig.freeze``): any later assignment raises, so a training cannot change what was
    saved as its config.yaml. Copies (``dataclasses.replace``, ``copy.deepcopy``) are unfrozen."""

    _frozen = False

    def __setattr__(self, name: str, value) -> None:
        if self._frozen:
            raise AttributeError(f"the run's configuration is resolved and frozen: {type(self).__name__}.{name} cannot change now")
        object.__setattr__(self, name, value)

    def __deepcopy__(self, memo: dict):
        fresh = object.__new__(type(self))
        memo[id(self)] = fresh
        for name, value in self.__dict__.items():
            if name != "_frozen":
                object.__setattr__(fresh, name, copy.deepcopy(value, memo))
        return fresh


@dataclass
class DataConfig(Section):
    """Where the sentences come from and which column is predicted."""

    dataset: str | None = "wnut17"  # a registry name; None when train/dev/test paths are given
    task: str | None = None  # a task of the dataset; None = its default task
    train: str | None = None  # paths of a user's own CoNLL / CoNLL-U files
    dev: str | None = None
    test: str | None = None
    columns: list[str] | None = None  # column names of a user's CoNLL files, e.g. [word, pos]
    scheme: str = "auto"  # tag scheme of a user's labels: auto (inferred from the labels) | none | iob1 | iob2 | bioes
    convert_scheme: str | None = None  # span labels: every split converted to iob1 | iob2 | bioes before training; the model predicts and is scored in it (BIOES as NCRF++'s conlleval reads it)
    strict: bool = False  # tags out of their scheme's order are an error (default: read as conlleval reads them, with a warning)
    separator: str = "auto"  # column files: auto (TAB if token lines hold TABs, else spaces) | tab | space
    metric: str | None = None  # accuracy | span_f1; None = the dataset's metric
    data_dir: str | None = None  # root holding dataset folders; else $SEQTRANSFER_DATA
    max_train_sentences: int | None = None  # keep the first N training sentences (learning curves)
    dev_from_train: bool = False  # early-stop on every 10th training sentence (kept out of training) instead of the dataset's own dev split
    max_sentence_length: int | None = None  # skip training sentences of more tokens (counted in a warning): a parser's memory grows with the square of a sentence's length
    train_fraction: float | None = None  # keep a random share (0, 1] of the training sentences, drawn with train.seed (the same subset for every method of a seed)
    exclude_fold: str | None = None  # "k/K": the training split without its k-th of K folds (sentence i, counted from 0, is in fold i mod K + 1); jackknifed input tags
    twitter_normalization: bool = False  # map @user, URLs, numbers to placeholders for the word embedding
    label_map: str | None = None  # YAML file: dataset -> {its label: the shared label}: datasets joined with + whose tag sets differ, or one read in another's tag set
    select_like: str | None = None  # unlabelled target text the training sentences are ranked against (corpora/selection.py); in an experiment file, 'target' = the target's test_on dataset
    select_by: str = "moore_lewis"  # moore_lewis (cross-entropy difference) | js (Jensen-Shannon to the target's words)
    select_top: float | None = None  # hard selection: keep this percentage (0, 100] of the most target-like training sentences
    select_weighting: bool = False  # soft selection: weight each training sentence's loss by its likeness rank (mean 1)
    select_tokenizer: str = "whitespace"  # how select_like's raw-text lines are split: whitespace | tweet
    select_word_column: int | None = None  # select_like is a column (CoNLL) file: the column (1-based) holding its words
    bootstrap: int | None = None  # train on a bootstrap sample (with replacement, same size) of the training split drawn with this seed (tri-training)
    pseudo_train: str | None = None  # a CoNLL file (word, label) of pseudo-labelled target sentences added to the training split (workflows/selflabel.py)
    pseudo_weight: float = 1.0  # loss weight of each pseudo-labelled sentence (gold sentences weigh 1)
    # Data annealing (Gu & Yu 2020; corpora/annealing.py): the source's labelled training sentences
    # mixed into each epoch, their share anneal_start * anneal_decay^(epoch - 1).
    anneal_source: str | None = None  # DATASET[:TASK] whose training split is mixed in (the target's tag set, or mapped by label_map)
    anneal_start: float = 0.9  # the first epoch's source share (1 = all the source sentences)
    anneal_decay: float = 0.9  # the share's factor per epoch


@dataclass
class ModelConfig(Section):
    """The base tagger of the PretRand paper (section 3); sizes count both LSTM directions."""

    word_dimension: int = 50
    embeddings: str | None = "glove-6b-50d"  # glove-6b-50d, a vector file path, or None (random)
    lowercase_words: bool = True  # lower-case for the word embedding only; characters keep case
    char_dimension: int = 50
    char_hidden: int = 100
    inputs: str = "both"  # what represents a word: both (word vector and character BiLSTM) | words | characters (co-training's views)
    hidden: int = 200
    # Between the representation and the classifier (To-tune paper, Table 5): None = the model's own
    # (the tagger: a BiLSTM of hidden units; a fine-tuned encoder: nothing) | bilstm | none
    feature_extractor: str | None = None
    feature_layers: int = 1  # the words encoder's BiLSTM layers (To-tune's feature extraction for NER: 2, appendix A.1)
    dropout: float = 0.5
    classifier: str = "softmax"  # softmax | crf
    architecture: str = "tagger"  # tagger | pretrand (set by the transfer scheme)
    random_hidden: int = 200  # PretRand: units k of the random branch's BiLSTM
    normalize_branches: bool = True  # PretRand: l2-normalise each branch's scores (equation 10)
    normalized_scale: float = 1.0  # PretRand: multiply the normalised scores by this (1 = equation 10; >1 lets the softmax be confident without u, v)
    branch_weighting: bool = True  # PretRand: learnable per-class weights u, v (equation 11)
    # Biaffine parser (dependency tasks). Sizes of Stanza's parser (Qi et al. 2018), which the
    # MuTSPad paper follows (section 5.3): a 3-layer BiLSTM of 400 units per direction, arc MLPs
    # of 400 and relation MLPs of 100 units (Dozat & Manning 2017: 400 per direction, 500, 100).
    parser_hidden: int = 800  # BiLSTM units, both directions
    parser_layers: int = 3
    arc_hidden: int = 400  # arc-dependent and arc-head MLPs
    relation_hidden: int = 100  # relation-dependent and relation-head MLPs
    single_root: bool | None = None  # decode one root per sentence; None = as the training trees (several roots in original Tweebank v2)
    # A tag column read as an input feature (Stanza's parser joins a 50-dimensional UPOS embedding
    # to each word; Qi et al. 2018): gold tags from the data's column, or predicted by a tagging run.
    tag_feature: str | None = None  # the column, e.g. upos (CoNLL-U); None = no tag input
    tag_tagger: str | None = None  # a tagging run directory whose predictions are the tags (every split, and at prediction time)
    tag_dimension: int = 50  # Stanza's UPOS embedding size
    tag_jackknife: int = 0  # with tag_tagger: the training split's tags come from K taggers trained like it on the other K - 1 folds (0 = the tagger tags it)
    tag_count: int = 0  # filled: rows of the tag embedding
    # Hierarchical multi-task model (MuTSPad paper, section 3.3): task -> the lower tasks whose
    # BiLSTM states it reads, e.g. {pos: [], chunk: [pos], ner: [pos, chunk], dp: [pos, chunk]}.
    # None = a single-task model. Each task's branch reads the shared word representation plus a
    # learned projection (T_task, ``projection`` units) of each lower task's states.
    tasks: dict[str, list[str]] | None = None
    task_kinds: dict[str, str] | None = None  # task -> task kind (tagging | dependency); filled from the data
    projection: int = 100  # units of each T_task (our choice: the paper does not give it)
    # A pretrained Transformer's token vectors joined to the word representation (frozen features,
    # a learned scalar mix of its layers; embeddings/transformer.py): a Hugging Face folder or minilm.
    encoder: str | None = None
    # What turns a batch into token states (models/encoders.py): None = as the rest implies (a
    # fine-tuned model.encoder: transformer; otherwise words: word vector + character BiLSTM)
    encoder_family: str | None = None
    encoder_pooling: str = "first"  # a token's vector (features and fine-tuning): its first sub-word | the mean of its sub-words
    sentence_reader: str | None = None  # sentence tasks: how token states become one vector (models/sentence_readers.py): None = pooled | pooler | max | biattention | esim | bcn | ulmfit | to_tune
    # sentence pairs and an encoder (model.encoder): one input A [SEP] B, with token types where a Transformer has them
    # (joint) | each text alone (separate; To-tune paper, Table 4; our recurrent LM: each text its own sentence, as ELMo's in A.1)
    pair_encoding: str = "joint"
    # the BCN reader's maxout layers of model.hidden units after its pooling, before the head's linear
    # output layer (AllenNLP's BCN: two, of 1,200 and 600 units, then a maxout output layer)
    bcn_maxout_layers: int = 1
    sentence_pooling: str = "cls"  # a fine-tuned encoder's sentence vector (classification, regression): its [CLS] | the mean of its token vectors
    encoder_join: bool = True  # features: join the word and character vectors (true) or replace them (false: the encoder's mix alone)
    encoder_mode: str = "features"  # features: frozen, cached, scalar mix joined to the word representation | finetune: the encoder trains, with a light head
    encoder_adapter: str | None = None  # finetune: lora (PEFT) | houlsby (bottlenecks); the encoder's own weights stay frozen, only the adapter's train and are saved
    adapter_size: int = 64  # houlsby: bottleneck units
    lora_rank: int = 8
    lora_alpha: int = 16
    encoder_hash: str | None = None  # filled: a hash of the encoder folder, checked when a run that saved only its adapter loads
    encoder_layers: int = 0  # filled from the encoder: its layers + 1 (embeddings)
    encoder_dimension: int = 0  # filled from the encoder: its hidden size
    center_scores: bool = False  # regression: the head's bias starts at the training scores' mean (score_mean), not at 0
    score_mean: float | None = None  # filled with center_scores: the training scores' mean
    sentence_pairs: bool | None = None  # sentence tasks: the data are pairs (A [SEP] B): the BiLSTM model pools A and B apart; None = from the data
    language_model_words: int = 0  # >0: auxiliary LM softmax layers over this many words, or a fine-tuned encoder's sub-words (filled when transfer.auxiliary_lm_weight is set)
    language_model_decoder: bool = False  # the fine-tuned encoder's masked-LM head has its own decoder: the encoder was pretrained untied (filled with language_model_words)
    discriminator_hidden: int = 0  # >0: a domain discriminator with this many hidden units (adversarial pretraining; filled when train.adversarial_data is set)


@dataclass
class TrainConfig(Section):
    """SGD with momentum (taggers) or Adam (parsers), batches of 16 sentences, early stopping on the dev score."""

    optimizer: str | None = None  # sgd | adam | adamw; None = the task kind's (sgd for tagging, adam for parsing)
    learning_rate: float | None = None  # None = the optimizer's: sgd 0.015 (PretRand paper), adam 0.003 (Stanza)
    # the head's own rate (a fine-tuned encoder's parser: its biaffine MLPs learn at this rate, the encoder at learning_rate;
    # filled with 1e-3 for it, SuPar's 20 x 5e-5); None = every layer at learning_rate
    head_learning_rate: float | None = None
    momentum: float = 0.9  # sgd
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])  # adam (Stanza's parser)
    learning_rate_decay: float = 0.0  # lr_epoch = lr / (1 + decay * epoch); NCRF++ uses 0.05, the paper none
    schedule: str | None = None  # inverse_time (uses learning_rate_decay) | linear_warmup | slanted_triangular; None = the model's (linear_warmup for fine-tuned encoders)
    warmup: float = 0.1  # linear_warmup: share of all steps spent warming up
    weight_decay: float = 0.0
    gradient_clip: float = 5.0
    batch_size: int = 16
    # tokens: sentences of similar token count share a batch | subwords: of similar sub-word count
    # (a fine-tuned encoder: a third less padding, faster; elsewhere as tokens) | random: no bucketing.
    # Annealed (data.anneal_*) and adversarial runs' batches, and multi-task streams, bucket by tokens.
    batching: str = "tokens"
    max_epochs: int = 100
    patience: int = 10
    min_epochs: int = 0  # early stopping waits until this epoch (data annealing: until the source's share is small)
    # also checkpoint inside an epoch after every this many minutes of it (training/progress.py): an epoch longer than
    # that resumes where it stopped, not from its start; 0 = at epoch ends only. Like threads, not part of a run's identity
    checkpoint_minutes: float = 10.0
    seed: int = 1
    threads: int = 2  # at most; fewer when the machine has fewer cores or OMP_NUM_THREADS (Ray) grants fewer
    share_cores: bool = True  # drop to the cores other programs leave free while they run, where that cannot change the numbers (threads.py); like threads, not part of a run's identity
    device: str = "auto"  # auto (first GPU, else CPU) | cpu | cuda | cuda:N | mps; like threads, not part of a run's identity
    amp: str = "off"  # mixed precision for fine-tuned encoders: off | auto (bf16 or fp16 on a CUDA GPU, else off) | bf16 | fp16 (training/precision.py)
    evaluation_batch_size: int = 512
    log_to: str | None = None  # tensorboard: each epoch's loss, dev scores and learning rates in RUN/tensorboard (extra 'tensorboard'); like threads, not part of a run's identity
    adversarial_data: str | None = None  # unlabelled target sentences for adversarial pretraining: DATASET[:TASK] (train split, labels ignored) or a text file
    adversarial_weight: float = 0.1  # lambda of the gradient-reversal layer (transfer/adversarial.py)
    adversarial_schedule: str = "constant"  # lambda over training: constant | ganin (0 -> adversarial_weight: 2 / (1 + exp(-10 p)) - 1, p the share of epochs done)
    adversarial_tokenizer: str = "whitespace"  # how adversarial_data's raw-text lines are split: whitespace | tweet
    adversarial_word_column: int | None = None  # adversarial_data is a column (CoNLL) file: the column (1-based) holding its words
    record_activations: list[int] | None = None  # epochs whose FE activations on dev are saved (0 = before training); see training/activations.py


@dataclass
class TransferConfig(Section):
    """Which transfer scheme trains the model, and from which source run."""

    scheme: str = "scratch"  # scratch | finetune | features | pretrand (see transfer/schemes.py)
    source: str | None = None  # run directory of the source model
    copy_shared_labels: bool = False  # also copy classifier rows of labels the source and target share
    random_plus_plus: bool = True  # PretRand: train the random units alone first, then jointly
    random_plus_plus_trains: str = (
        "random_units"  # PretRand, random++'s first phase: random_units (every randomly initialised parameter: Phi_r, Psi_r, Psi_p, u, v, the CRF) | random_branch (Phi_r and Psi_r alone)
    )
    random_branch_learning_rate: float | None = None  # PretRand: the random branch (Phi_r, Psi_r) at this rate in every phase, over any discriminative rate; None = train.learning_rate
    adaptations: list[str] = field(default_factory=list)  # discriminative | gradual_unfreezing | chain_thaw | l2sp | ewc, combinable (transfer/adaptations.py ADAPTATIONS)
    discriminative_factor: float = 2.6  # each layer group below the top trains at 1/factor of the rate above (ULMFiT)
    l2sp_weight: float = 0.01  # alpha of L2-SP, per batch
    ewc_weight: float = 1.0  # lambda of EWC, per batch
    ewc_batches: int = 100  # source training batches the Fisher information is estimated on
    distill_from: list[str] = field(default_factory=list)  # teacher run directories (an ensemble) distilled into this model (transfer/distillation.py)
    distillation_temperature: float = 2.0
    distillation_weight: float = 1.0
    auxiliary_lm_weight: float = 0.0  # > 0: add this times a bidirectional LM loss on the training sentences (transfer/auxiliary_lm.py; fine-tuned encoders: masked_lm.py)
    auxiliary_lm_words: int = 5000  # the LM predicts the most frequent words; the others as unknown


@dataclass
class MultiTaskConfig(Section):
    """Where each task of a multi-task model (``model.tasks``) finds its data, and how tasks share training.

    See ``workflows/multitask.py``: "one task per batch" in the hierarchy's low -> high order
    (MuTSPad paper, section 4.2.1), loss weights doubled every epoch until 1 (section 4.1).
    """

    data: dict[str, str | dict] | None = None  # task -> "dataset", "dataset:task" or {train: PATH, dev: PATH, test: PATH, columns: [...], task: NAME}
    unified: str | None = None  # a folder written by `seqtransfer unify`: train on its train.conllu (every task at every step); dev/test stay ``data``'s
    sampling: str = "round_robin"  # round_robin: one task per batch, low -> high, until every set is used once | proportional: a random task, weighted by its batches left
    loss_weights: dict[str, float] | None = None  # first-epoch weight per task; None = 2^-level (paper: pos 1, chunk 0.5, ner 0.25, dp 0.25)
    weight_schedule: str = "geometric"  # how the loss weights change per epoch (workflows/multitask.py WEIGHT_SCHEDULES): geometric | linear | constant
    weight_growth: float = 2.0  # geometric: weights are multiplied by this every epoch, up to 1 (1.0 = constant)
    weight_ramp_epochs: int = 3  # linear: the epoch at which every weight has risen in equal steps to 1
    early_stopping: str = "mean"  # the dev score early stopping watches: mean of the tasks' main scores | a task's name


@dataclass
class RunConfig(Section):
    """Everything that defines one training run."""

    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    transfer: TransferConfig = field(default_factory=TransferConfig)
    multitask: MultiTaskConfig = field(default_factory=MultiTaskConfig)

    def freeze(self) -> RunConfig:
        """Forbid every later assignment into this configuration and its sections (``Section``)."""
        for section in (self.data, self.model, self.train, self.transfer, self.multitask, self):
            object.__setattr__(section, "_frozen", True)
        return self
