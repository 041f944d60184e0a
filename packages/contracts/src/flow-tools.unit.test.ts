import { describe, expect, it } from 'vitest';
import { FLOW_TOOL_NAMESPACE, flowDefinitionNameOf, flowProviderId, flowToolId, isFlowToolId } from './flow-tools.js';
import { ToolId } from './primitives.js';

describe('flow tool ids', () => {
  it('puts a definition under the reserved namespace and reads it back', () => {
    expect(flowToolId('orders.refund')).toBe(`${FLOW_TOOL_NAMESPACE}.orders.refund`);
    expect(ToolId.safeParse(flowToolId('orders.refund')).success).toBe(true);
    expect(isFlowToolId('flows.orders.refund')).toBe(true);
    expect(isFlowToolId('github.create_issue')).toBe(false);
    expect(isFlowToolId('flowsx.a')).toBe(false);
    expect(flowDefinitionNameOf('flows.orders.refund')).toBe('orders.refund');
    expect(flowDefinitionNameOf('github.create_issue')).toBeUndefined();
  });

  it('derives one provider id per workspace', () => {
    const id = flowProviderId({ tenant: 't1', workspace: 'w1' });
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(flowProviderId({ tenant: 't1', workspace: 'w1' })).toBe(id);
    expect(flowProviderId({ tenant: 't1', workspace: 'w2' })).not.toBe(id);
    expect(flowProviderId({ tenant: 't2', workspace: 'w1' })).not.toBe(id);
  });
});
