// Runs train steps: samples an augmented batch, feeds it with the state to the train-step graph
// in onnxruntime-node, and keeps the updated weights and moments.
import * as ort from "onnxruntime-node";
import { type ExecutionProvider, type ExecutionProviderChoice, sessionOnProvider } from "../engine/model.ts";
import { parameterLayout } from "../network/parameter-layout.ts";
import { buildTrainStepModel, TrainStepNames as N } from "../network/train-step-model.ts";
import { sampleCrop } from "./augment.ts";
import type { TrainingState } from "./checkpoint.ts";
import { cumulativeSamplingWeights, drawIndex } from "./image-sampling.ts";
import { initialParameters } from "./initial-parameters.ts";
import { learningRateAt } from "./learning-rate.ts";
import type { TrainingImages } from "./prepared-image-cache.ts";
import { SeededRandom } from "./random.ts";
import type { TrainingConfig } from "./training-config.ts";

export function freshTrainingState(config: TrainingConfig, params?: Float32Array): TrainingState {
  const count = parameterLayout(config.network).totalSize;
  if (params && params.length !== count) throw new Error(`starting weights have ${params.length} values, the network needs ${count}`);
  return {
    config,
    step: 0,
    randomState: new SeededRandom(config.seed).state,
    params: params ? params.slice() : initialParameters(parameterLayout(config.network), config.seed),
    firstMoment: new Float32Array(count),
    secondMoment: new Float32Array(count),
    history: {},
  };
}

export class Trainer {
  readonly state: TrainingState;
  private readonly session: ort.InferenceSession;
  private readonly sources: TrainingImages;
  /** Cumulative sampling weights over the sources, by the config's `sampling` rule. */
  private readonly cumulativeWeights: Float64Array;

  /** Where the train steps run, and why the providers tried before it were passed over. */
  readonly executionProvider: ExecutionProvider;
  readonly providersSkipped: readonly string[];

  private constructor(state: TrainingState, session: ort.InferenceSession, sources: TrainingImages, provider: ExecutionProvider, skipped: string[]) {
    this.state = state;
    this.executionProvider = provider;
    this.providersSkipped = skipped;
    this.session = session;
    this.sources = sources;
    this.cumulativeWeights = cumulativeSamplingWeights([...sources.ids], state.config.sampling ?? "per-set");
  }

  /**
   * The train steps run on `provider` (default the CPU; "auto": CUDA, else WebGPU, else CPU, as
   * inference chooses); `executionProvider` says which one took them.
   */
  static async create(
    state: TrainingState,
    sources: TrainingImages,
    sessionOptions: ort.InferenceSession.SessionOptions = {},
    provider: ExecutionProviderChoice = "cpu",
  ): Promise<Trainer> {
    if (sources.ids.length === 0) throw new Error("no training images");
    const model = buildTrainStepModel(state.config.network, state.config.adamW);
    const { session, provider: chosen, skipped } = await sessionOnProvider(model, provider, sessionOptions);
    return new Trainer(state, session, sources, chosen, skipped);
  }

  /** Draws an image by the sampling weights; it may be prepared now (prepared-image-cache.ts). */
  private async pickSource(random: SeededRandom) {
    return this.sources.get(drawIndex(this.cumulativeWeights, random.next()));
  }

  /** One optimisation step; returns the batch's loss before the update. */
  async step(): Promise<{ loss: number; learningRate: number }> {
    const { config } = this.state;
    const { batchSize, cropSize } = config;
    const random = new SeededRandom(0);
    random.state = this.state.randomState;
    const channels = config.network.inputChannels;
    const plane = cropSize * cropSize;
    const images = new Float32Array(batchSize * channels * plane);
    const targets = new Float32Array(batchSize * 3 * plane);
    for (let b = 0; b < batchSize; b++) {
      const source = await this.pickSource(random);
      if (source.channels !== channels) throw new Error(`${source.id} was prepared with ${source.channels} channels, the network reads ${channels}`);
      sampleCrop(source, cropSize, random, config.augmentation, images, targets, b);
    }

    const stepNumber = this.state.step + 1;
    const learningRate = learningRateAt(config.schedule, stepNumber);
    const count = this.state.params.length;
    const out = await this.session.run({
      [N.images]: new ort.Tensor("float32", images, [batchSize, channels, cropSize, cropSize]),
      [N.targets]: new ort.Tensor("float32", targets, [batchSize, 3, cropSize, cropSize]),
      [N.params]: new ort.Tensor("float32", this.state.params, [count]),
      [N.firstMoment]: new ort.Tensor("float32", this.state.firstMoment, [count]),
      [N.secondMoment]: new ort.Tensor("float32", this.state.secondMoment, [count]),
      [N.step]: new ort.Tensor("float32", Float32Array.of(stepNumber), []),
      [N.learningRate]: new ort.Tensor("float32", Float32Array.of(learningRate), []),
    });
    // run returns every output of the graph, and the train-step graph (train-step-model.ts) has these.
    const loss = out[N.loss]!.data[0] as number;
    if (!Number.isFinite(loss)) throw new Error(`training diverged at step ${stepNumber}: loss ${loss}`);
    // Copies: onnxruntime may release its output buffers once the tensors are collected.
    this.state.params = (out[N.newParams]!.data as Float32Array).slice();
    this.state.firstMoment = (out[N.newFirstMoment]!.data as Float32Array).slice();
    this.state.secondMoment = (out[N.newSecondMoment]!.data as Float32Array).slice();
    this.state.step = stepNumber;
    this.state.randomState = random.state;
    return { loss, learningRate };
  }
}
