import { toolplaneVitestConfig } from '../../vitest.preset.js';

export default toolplaneVitestConfig({ infra: false });
