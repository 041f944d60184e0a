import { describe, expect, it } from 'vitest';
import { generateRecipientKeyPair } from '@toolplane/sealing';
import { SealingKeySetting } from './sealing-key-setting.js';

describe('TOOL_ADAPTER_SECRET_KEY', () => {
  it('reads the private key the development key script writes', () => {
    const parsed = SealingKeySetting.parse(generateRecipientKeyPair().privateKey);
    expect(parsed.asymmetricKeyType).toBe('x25519');
    expect(parsed.type).toBe('private');
  });

  it('refuses anything else with one message that does not echo the value', () => {
    for (const bad of ['not-a-key', 'AAAA', Buffer.alloc(31).toString('base64url')]) {
      const result = SealingKeySetting.safeParse(bad);
      expect(result.success).toBe(false);
      expect(result.error?.issues).toHaveLength(1);
      expect(result.error?.issues[0]?.message).toContain('X25519 private key');
      if (bad.length > 4) expect(result.error?.issues[0]?.message).not.toContain(bad);
    }
  });
});
